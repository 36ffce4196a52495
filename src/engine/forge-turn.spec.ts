import { forgeTurn } from './forge-turn';
import type { PolicyClock } from './policy';
import { localForgeLimits } from './stores/forge-limits';

/** A clock whose sleeps move its time at once, recording each. */
function movingClock(start: number): PolicyClock & { readonly slept: number[] } {
  let now = start;
  const slept: number[] = [];
  return {
    slept,
    now: () => new Date(now),
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
  };
}

describe('forgeTurn', () => {
  const limit = { name: 'project_import', perMinute: 2 };

  it('takes a request at once while the minute has room, and waits out the window when it has none, saying so', async () => {
    const limits = localForgeLimits();
    const clock = movingClock(Date.parse('2026-11-24T02:00:00Z'));
    const heard: number[] = [];

    await forgeTurn(limits, limit, clock, (ms) => heard.push(ms));
    await forgeTurn(limits, limit, clock, (ms) => heard.push(ms));
    expect(clock.slept).toEqual([]);

    const third = await forgeTurn(limits, limit, clock, (ms) => heard.push(ms));
    expect(third.waitMs).toBe(0);
    expect(heard).toEqual([60_000]);
    expect(clock.slept).toEqual([60_000]);
  });
});
