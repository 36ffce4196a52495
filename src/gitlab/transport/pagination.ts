/** Pagination helpers (octokit plugin-paginate-rest style); the loop itself lives in `Transport.paginate`. */

export interface PageOptions<T> {
  /** Items per page; the forge caps it at 100. */
  perPage?: number;
  /** Page guard: at most this many pages are fetched. */
  maxPages?: number;
  /** What to do when the guard is hit with pages left: raise `PageLimitError` (default) or end quietly. */
  onPageLimit?: 'throw' | 'stop';
  /**
   * Stops the listing at the first item for which this holds, without yielding it and without fetching further
   * pages, e.g. a job poller on a newest-first list stops at the last job it has already seen.
   */
  until?: (item: T) => boolean;
}

/** A lazily fetched list: pages are requested as the consumer iterates; `break` stops fetching. */
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

/** `X-Next-Page` is empty on the last page; only a positive integer means "there is more". */
export function parseNextPage(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined;
  const page = Number(value.trim());
  return page > 0 ? page : undefined;
}
