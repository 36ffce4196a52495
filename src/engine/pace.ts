import type { Clock } from '../clock';

/**
 * How a scheduled pass spreads the reads of its targets over its interval, so a policy over thousands of projects is a
 * steady trickle, not a burst at each tick (see docs/architecture.md, "Pacing a pass over its interval").
 */
export interface TargetPace {
  /** Resolves when the target at `index` may be read. */
  turn(index: number): Promise<void>;
  /** How long after its start the pass reads its last target, at this pace. */
  readonly lastStartMs: number;
}

/** The share of a policy's interval its scheduled pass spreads its reads over; the rest is left for acting and slack. */
export const SPREAD_FRACTION = 0.5;

/** The longest wait between two targets: a policy of twenty projects reads them in five seconds, not in minutes. */
export const MAX_GAP_MS = 250;

export interface PaceOptions {
  readonly clock: Clock;
  /** The time the reads may spread over. */
  readonly windowMs: number;
  /** The shared budget, requests per minute. */
  readonly requestsPerMinute: number;
}

/** A pace for `count` targets starting now; the gap between them as described on TargetPace. */
export function evenPace({ clock, windowMs, requestsPerMinute }: PaceOptions, count: number): TargetPace {
  const start = clock.now();
  const fastest = 60_000 / requestsPerMinute;
  const gap = count <= 1 ? 0 : Math.max(fastest, Math.min(windowMs / count, MAX_GAP_MS));
  return {
    lastStartMs: gap * Math.max(0, count - 1),
    async turn(index: number): Promise<void> {
      const wait = start + index * gap - clock.now();
      if (wait > 0) await clock.sleep(wait);
    },
  };
}

/** No pace: every target may be read at once (`plan`, `once`, cron passes), as fast as the concurrency allows. */
export function unpaced(): TargetPace {
  return { lastStartMs: 0, turn: async () => undefined };
}
