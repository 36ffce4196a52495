import type { ObserveContext } from './policy';

/**
 * `fn` over `items` with at most `limit` calls in flight, results in the order of `items`. The observer's extra reads
 * (pipeline jobs, logs) go through it so that a burst of failures does not turn into a burst of requests; the
 * client's own concurrency cap is shared by every policy, this one is per pass.
 */
export async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  return pulled(items, limit, (item) => fn(item));
}

/**
 * `fn` over the targets of a pass (projects, groups), `context.concurrency` at a time and, in a scheduled pass, at
 * the pace that spreads them over the interval (see TargetPace); results in the order of `items`.
 */
export async function mapTargets<T, R>(
  context: Pick<ObserveContext, 'concurrency' | 'pace'>,
  items: readonly T[],
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const pace = context.pace(items.length);
  return pulled(items, context.concurrency, async (item, index) => {
    // Waiting inside the slot is harmless: slots are taken in order, so the holders are the next targets due.
    await pace.turn(index);
    return fn(item);
  });
}

/**
 * `limit` workers that each take the next item when they are free, results in the order of `items`. Nothing is made
 * for an item before its turn: a pass over 20,000 projects holds `limit` of them in flight, not 20,000 waiting
 * promises that live as long as the pass (and outlive the young generation, docs/benchmarks.md). On the first failure
 * the result rejects at once; the workers go on with the rest, as queued calls would.
 */
async function pulled<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * A gate for tasks that arrive one by one (a detail read per tag as the listing streams in): each task starts as soon
 * as fewer than `limit` are running, and `run` resolves or rejects with its task's result. A finishing task hands its
 * slot straight to the longest waiting one, so a task arriving meanwhile cannot slip in over the limit.
 */
export function limitedRunner(limit: number): <R>(task: () => Promise<R>) => Promise<R> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async <R>(task: () => Promise<R>): Promise<R> => {
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      release();
    }
  };
}

/**
 * `fn` over `items`, at most `limit` at a time, results in the order of `items`, for work that must not outlive its
 * caller (a pass's actions): after the first failure no further item starts, those already started are waited for,
 * and then the first failure is thrown. mapLimited, by contrast, rejects at once and lets the rest run on.
 */
export async function mapUntilFailure<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index]);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
  return results;
}
