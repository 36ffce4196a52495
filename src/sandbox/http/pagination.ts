import { intParam, type Reply, type RequestContext } from './context';

/** Above this many records the forge stops counting: no `X-Total`, `X-Total-Pages` or `rel="last"`. */
export const COUNT_LIMIT = 10_000;
const DEFAULT_PER_PAGE = 20;
const MAX_PER_PAGE = 100;

/**
 * Offset pagination as the forge answers it: `page`/`per_page` (default 20, at most 100), the `X-*` headers (next
 * and previous page empty when there is none) and a `Link` header with prev, next, first and last.
 */
export function paginate<T>(ctx: RequestContext, items: readonly T[], present: (item: T) => unknown): Reply {
  const requestedPerPage = intParam(ctx, 'per_page');
  const requestedPage = intParam(ctx, 'page');
  const perPage =
    requestedPerPage === undefined || requestedPerPage < 1
      ? DEFAULT_PER_PAGE
      : Math.min(requestedPerPage, MAX_PER_PAGE);
  const page = requestedPage === undefined || requestedPage < 1 ? 1 : requestedPage;

  const total = items.length;
  const totalPages = Math.max(1, Math.ceil(total / perPage));
  const counted = total <= COUNT_LIMIT;
  const slice = items.slice((page - 1) * perPage, page * perPage);
  const hasNext = page * perPage < total;
  const hasPrev = page > 1;

  const headers: Record<string, string> = {
    'X-Page': String(page),
    'X-Per-Page': String(perPage),
    'X-Next-Page': hasNext ? String(page + 1) : '',
    'X-Prev-Page': hasPrev ? String(page - 1) : '',
  };
  if (counted) {
    headers['X-Total'] = String(total);
    headers['X-Total-Pages'] = String(totalPages);
  }

  const link = (p: number, rel: string): string => `<${pageUrl(ctx, p, perPage)}>; rel="${rel}"`;
  const links: string[] = [];
  if (hasPrev) links.push(link(page - 1, 'prev'));
  if (hasNext) links.push(link(page + 1, 'next'));
  links.push(link(1, 'first'));
  if (counted) links.push(link(totalPages, 'last'));
  headers.Link = links.join(', ');

  return { status: 200, json: slice.map(present), headers };
}

/**
 * Keyset pagination as the forge answers `GET /projects?pagination=keyset&order_by=id`: `items` already ordered by
 * id (`sort`), filtered by the request's `id_after`/`id_before`; the first `per_page` of them, and while the page is
 * not empty a `Link: rel="next"` to the same request with `id_after` (ascending) or `id_before` (descending) set to
 * the page's last id. No `X-*` headers and no totals; the listing ends at an empty page, as on the forge, whose
 * pager does not look ahead.
 */
export function paginateByKeyset<T extends { id: number }>(
  ctx: RequestContext,
  items: readonly T[],
  sort: 'asc' | 'desc',
  present: (item: T) => unknown,
): Reply {
  const requestedPerPage = intParam(ctx, 'per_page');
  const perPage =
    requestedPerPage === undefined || requestedPerPage < 1
      ? DEFAULT_PER_PAGE
      : Math.min(requestedPerPage, MAX_PER_PAGE);
  const slice = items.slice(0, perPage);
  const last = slice.at(-1);
  const headers: Record<string, string> = {};
  if (last) {
    const query = new URLSearchParams(ctx.query);
    query.set(sort === 'asc' ? 'id_after' : 'id_before', String(last.id));
    headers.Link = `<${ctx.baseUrl}/api/v4${ctx.path}?${query.toString()}>; rel="next"`;
  }
  return { status: 200, json: slice.map(present), headers };
}

function pageUrl(ctx: RequestContext, page: number, perPage: number): string {
  const query = new URLSearchParams(ctx.query);
  query.set('page', String(page));
  query.set('per_page', String(perPage));
  return `${ctx.baseUrl}/api/v4${ctx.path}?${query.toString()}`;
}
