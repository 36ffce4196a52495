import { mapLimited } from './map-limited';

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
    for (let finished = 1; finished < 7; ) {
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
    await expect(mapLimited([1, 2, 3], 2, async (x) => { if (x === 2) throw new Error('boom'); return x; })).rejects.toThrow('boom');
  });

  it('refuses a limit below 1', async () => {
    await expect(mapLimited([1], 0, async (x) => x)).rejects.toThrow(RangeError);
  });
});
