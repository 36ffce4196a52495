/** Pagination helpers (octokit plugin-paginate-rest style); the loop itself lives in `Transport.paginate`. */

export interface PageOptions<T> {
  /** Items per page; the forge caps it at 100. */
  perPage?: number;
  /** Page guard: at most this many pages are fetched. */
  maxPages?: number;
  /** What to do when the guard is hit with pages left: raise `PageLimitError` (default) or end quietly. */
  onPageLimit?: 'throw' | 'stop';
  /**
   * Stops the listing at the first item for which this holds, without yielding it and without asking for further
   * pages (those already read ahead are dropped), e.g. a job poller on a newest-first list stops at the last job it
   * has already seen.
   */
  until?: (item: T) => boolean;
}

/**
 * A lazily fetched list: pages are requested a bounded number ahead of the consumer and yielded in order; `break`
 * stops asking for more.
 */
export type Paginated<T> = AsyncIterableIterator<T>;

export const DEFAULT_PER_PAGE = 100;
export const DEFAULT_MAX_PAGES = 1_000;

/** Parses `Link: <url>; rel="next", <url>; rel="last"` into rel → url. */
export function parseLinkHeader(value: string | undefined): Map<string, string> {
  const links = new Map<string, string>();
  if (!value) return links;
  const pattern = /<([^>]*)>((?:\s*;\s*[^;,]+)*)/g;
  for (let match = pattern.exec(value); match; match = pattern.exec(value)) {
    const rel = /;\s*rel\s*=\s*"?([^";,]+)"?/i.exec(match[2])?.[1];
    if (!rel) continue;
    for (const name of rel.trim().split(/\s+/)) if (!links.has(name)) links.set(name.toLowerCase(), match[1]);
  }
  return links;
}

function positiveInteger(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined;
  const number = Number(value.trim());
  return number > 0 && Number.isSafeInteger(number) ? number : undefined;
}

/** `X-Next-Page` is empty on the last page; only a positive integer means "there is more". */
export function parseNextPage(value: string | undefined): number | undefined {
  return positiveInteger(value);
}

/** `X-Total-Pages` as a count of pages; undefined when absent (the forge omits it above 10,000 records) or odd. */
export function parseTotalPages(value: string | undefined): number | undefined {
  return positiveInteger(value);
}

/** The `page` parameter of a path-and-query, as a number; undefined for keyset links, which have none. */
export function pageNumberOf(pathAndQuery: string): number | undefined {
  const page = new URL(pathAndQuery, 'http://placeholder/').searchParams.get('page');
  return page === null ? undefined : positiveInteger(page);
}

/**
 * `pathAndQuery` asking for page `page` instead: only the `page` parameter is rewritten, every other one stays as the
 * forge spelled it in its link, so the numbered pages carry exactly the filters the forge confirmed.
 */
export function withPageNumber(pathAndQuery: string, page: number): string {
  const at = pathAndQuery.indexOf('?');
  if (at === -1) return `${pathAndQuery}?page=${page}`;
  const params = pathAndQuery.slice(at + 1).split('&');
  const isPage = (param: string): boolean => {
    const name = param.split('=', 1)[0];
    try {
      return decodeURIComponent(name.replace(/\+/g, ' ')) === 'page';
    } catch {
      return false;
    }
  };
  const rewritten = params.some(isPage)
    ? params.map((param) => (isPage(param) ? `page=${page}` : param))
    : [...params, `page=${page}`];
  return `${pathAndQuery.slice(0, at)}?${rewritten.join('&')}`;
}
