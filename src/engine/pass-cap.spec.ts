import type { Decision } from './decision';
import { dryRunOutcomes, PassCap } from './pass-cap';

const decision = (action: string, n: number): Decision => ({
  action,
  target: `target ${n}`,
  key: `k${n}`,
  reason: 'why',
  params: {},
});

describe('PassCap', () => {
  it('gives as many places as its size, then none', () => {
    const cap = new PassCap(2);
    expect([cap.take(), cap.take(), cap.take()]).toEqual([true, true, false]);
    expect(new PassCap(0).take()).toBe(false);
  });
});

describe('dryRunOutcomes', () => {
  it('skips skips, lets the first actions up to the cap act and defers the rest, in order', () => {
    const decisions = [
      decision('retry', 1),
      decision('skip', 2),
      decision('retry', 3),
      decision('retry', 4),
      decision('skip', 5),
    ];
    expect(dryRunOutcomes(decisions, 2)).toEqual(['would_act', 'skipped', 'would_act', 'deferred', 'skipped']);
    expect(dryRunOutcomes(decisions, Number.MAX_SAFE_INTEGER)).toEqual([
      'would_act',
      'skipped',
      'would_act',
      'would_act',
      'skipped',
    ]);
  });
});
