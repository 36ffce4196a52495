import { limitedRunner, mapLimited, mapUntilFailure } from './map-limited';

/** A call that finishes only when the test says so, so concurrency is observed without timing. */
interface Pending {
  readonly item: number;
  done: boolean;
  finish(): void;
}

describe('mapLimited', () => {
  it('keeps at most `limit` calls in flight and returns results in input order', async () => {
    const pending: Pending[] = [];
    let inFlight = 0;
    let most = 0;
    const settled = async (): Promise<void> => {
      for (let i = 0; i < 5; i++) await Promise.resolve();
    };
    const done = mapLimited([1, 2, 3, 4, 5, 6, 7], 3, (item) => {
      inFlight++;
      most = Math.max(most, inFlight);
      return new Promise<number>((resolve) => {
        const entry: Pending = {
          item,
          done: false,
          finish: () => {
            entry.done = true;
            inFlight--;
            resolve(item * 10);
          },
        };
        pending.push(entry);
      });
    });

    await settled();
    expect(pending.map((p) => p.item)).toEqual([1, 2, 3]);
    // Finish out of order: each finished call lets exactly one more start.
    pending[1].finish();
    await settled();
    expect(pending.map((p) => p.item)).toEqual([1, 2, 3, 4]);
    // Then finish whatever runs, round by round, until every item has started and finished.
    for (let finished = 1; finished < 7;) {
      const running = pending.filter((p) => !p.done);
      running.forEach((p) => p.finish());
      finished += running.length;
      await settled();
      expect(pending.filter((p) => !p.done).length).toBeLessThanOrEqual(3);
    }
    expect(await done).toEqual([10, 20, 30, 40, 50, 60, 70]);
    expect(most).toBe(3);
  });

  it('handles no items and fewer items than the limit', async () => {
    expect(await mapLimited([], 4, async (x: number) => x)).toEqual([]);
    expect(await mapLimited([1, 2], 4, async (x) => x + 1)).toEqual([2, 3]);
  });

  it('rejects with the first failure', async () => {
    await expect(
      mapLimited([1, 2, 3], 2, async (x) => {
        if (x === 2) throw new Error('boom');
        return x;
      }),
    ).rejects.toThrow('boom');
  });

  it('refuses a limit below 1', async () => {
    await expect(mapLimited([1], 0, async (x) => x)).rejects.toThrow(RangeError);
  });
});

describe('limitedRunner', () => {
  it('starts tasks as they arrive, never more than the limit at once, even when one arrives as another finishes', async () => {
    const run = limitedRunner(2);
    let inFlight = 0;
    let most = 0;
    const finishers: Array<() => void> = [];
    const task = (value: number) => () => {
      inFlight++;
      most = Math.max(most, inFlight);
      return new Promise<number>((resolve) =>
        finishers.push(() => {
          inFlight--;
          resolve(value);
        }),
      );
    };
    const results = [run(task(1)), run(task(2)), run(task(3))];
    await Promise.resolve();
    expect(finishers).toHaveLength(2);
    // One finishes and, in the same turn, a fourth arrives: the waiting third takes the slot, the fourth waits.
    finishers[0]();
    results.push(run(task(4)));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(inFlight).toBe(2);
    expect(finishers).toHaveLength(3);
    finishers[1]();
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(finishers).toHaveLength(4);
    finishers[2]();
    finishers[3]();
    expect(await Promise.all(results)).toEqual([1, 2, 3, 4]);
    expect(most).toBe(2);
  });

  it('passes a failure to its own caller and frees the slot', async () => {
    const run = limitedRunner(1);
    await expect(
      run(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await run(async () => 'next')).toBe('next');
  });
});

describe('mapUntilFailure', () => {
  /** Calls that finish when the test releases them, recording when each started and ended. */
  function gated() {
    const events: string[] = [];
    const gates = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
    const fn = (item: number) =>
      new Promise<number>((resolve, reject) => {
        events.push(`start ${item}`);
        gates.set(item, {
          resolve: () => {
            events.push(`end ${item}`);
            resolve(item * 10);
          },
          reject: (error) => {
            events.push(`fail ${item}`);
            reject(error);
          },
        });
      });
    const settle = async (item: number, error?: Error) => {
      while (!gates.has(item)) await new Promise((resolve) => setImmediate(resolve));
      const gate = gates.get(item)!;
      if (error) gate.reject(error);
      else gate.resolve();
    };
    return { events, fn, settle };
  }

  it('keeps at most `limit` in flight and returns results in input order', async () => {
    const { events, fn, settle } = gated();
    const all = mapUntilFailure([1, 2, 3, 4], 2, fn);
    await settle(2);
    await settle(1);
    await settle(3);
    await settle(4);
    expect(await all).toEqual([10, 20, 30, 40]);
    expect(events).toEqual(['start 1', 'start 2', 'end 2', 'start 3', 'end 1', 'start 4', 'end 3', 'end 4']);
  });

  it('after a failure starts nothing more, waits for what already runs, then throws the first failure', async () => {
    const { events, fn, settle } = gated();
    let outcome: unknown;
    const all = mapUntilFailure([1, 2, 3, 4, 5], 2, fn).catch((error: unknown) => (outcome = error));
    await settle(1, new Error('redis went away'));
    await new Promise((resolve) => setImmediate(resolve));
    // Item 2 still runs: the call has not returned while it does.
    expect(outcome).toBeUndefined();
    await settle(2);
    await all;
    expect(outcome).toEqual(new Error('redis went away'));
    expect(events).toEqual(['start 1', 'start 2', 'fail 1', 'end 2']);
  });

  it('handles no items and refuses a limit below 1', async () => {
    expect(await mapUntilFailure([], 3, async (x: number) => x)).toEqual([]);
    await expect(mapUntilFailure([1], 0, async (x) => x)).rejects.toThrow(RangeError);
  });
});
