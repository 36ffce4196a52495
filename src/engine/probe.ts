import type { PageOptions, Paginated } from '../gitlab';

/** One item of one page: enough to show the listing exists and the token may read it. */
export function onePage<T>(): PageOptions<T> {
  return { perPage: 1, maxPages: 1, onPageLimit: 'stop' };
}

/** Reads the first page of a listing and drops it; the forge's refusal is the answer a probe looks for. */
export async function readFirstPage<T>(items: Paginated<T>): Promise<void> {
  for await (const item of items) {
    void item;
    break;
  }
}
