import { FakeClock } from '../../test/support/gitlab/fake-clock';
import { mapTargets } from './map-limited';
import { evenPace, MAX_GAP_MS, unpaced } from './pace';

/** When each of `count` targets started, ms after the pass began, read `concurrency` at a time at `pace`. */
async function starts(
  count: number,
  settings: { windowMs: number; requestsPerMinute: number },
  concurrency = 4,
): Promise<number[]> {
  const clock = new FakeClock();
  const began = clock.now();
  const items = Array.from({ length: count }, (_, index) => index);
  return mapTargets(
    { concurrency, pace: (n) => evenPace({ clock, ...settings }, n) },
    items,
    async () => clock.now() - began,
  );
}

describe('evenPace', () => {
  it('spreads many targets evenly over the window', async () => {
    // 1,000 projects over 30 s (half of a 1m interval), with budget to spare: one every 30 ms.
    const times = await starts(1_000, { windowMs: 30_000, requestsPerMinute: 100_000 });
    expect(times.slice(0, 4)).toEqual([0, 30, 60, 90]);
    expect(times[999]).toBe(29_970);
  });

  it('never goes faster than the whole budget allows, even if that overruns the window', async () => {
    // 600 requests a minute is one every 100 ms, so 1,000 projects take 100 s whatever the window says.
    const pace = evenPace({ clock: new FakeClock(), windowMs: 30_000, requestsPerMinute: 600 }, 1_000);
    expect(pace.lastStartMs).toBe(99_900);
    const times = await starts(5, { windowMs: 300, requestsPerMinute: 600 });
    expect(times).toEqual([0, 100, 200, 300, 400]);
  });

  it('does not stretch a small policy over its whole window', async () => {
    const times = await starts(3, { windowMs: 3_600_000, requestsPerMinute: 100_000 });
    expect(times).toEqual([0, MAX_GAP_MS, 2 * MAX_GAP_MS]);
  });

  it('starts a single target at once', async () => {
    expect(await starts(1, { windowMs: 30_000, requestsPerMinute: 1 })).toEqual([0]);
  });

  it('keeps the order of the targets when they are read one at a time', async () => {
    const times = await starts(4, { windowMs: 400, requestsPerMinute: 100_000 }, 1);
    expect(times).toEqual([0, 100, 200, 300]);
  });
});

describe('mapTargets without a pace', () => {
  it('starts every target at once, up to the concurrency', async () => {
    const clock = new FakeClock();
    const times = await mapTargets({ concurrency: 2, pace: unpaced }, [1, 2, 3], async () => clock.now());
    expect(new Set(times).size).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });
});
