/**
 * `fn` over `items` with at most `limit` calls in flight, results in the order of `items`. The observer's extra reads
 * (pipeline jobs, logs) go through it so that a burst of failures does not turn into a burst of requests; the
 * client's own concurrency cap is shared by every policy, this one is per pass.
 */
export async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
