/**
 * How a wait that may last more than a moment is said: once, as it starts (what it waits for, why, until when), and
 * in the final message, the time actually waited. A person at a terminal otherwise sees nothing for half a minute.
 */

/** Waits expected to end sooner than this are not announced. */
export const ANNOUNCE_AFTER_MS = 2_000;

/** `waiting for Redis at … (REDIS_URL): connection refused; trying again until 14:03:07 at the latest (redis.connect_timeout 10s)` */
export function waitingLine(what: string, why: string, untilMs: number, bound: string): string {
  return `waiting for ${what}: ${why}; trying again until ${localClock(untilMs)} at the latest (${bound})`;
}

/** `retry of acme/api job 12: waiting 30s (its delay), until 14:03:07`: a wait that ends by itself. */
export function delayLine(what: string, why: string, waitMs: number, untilMs: number): string {
  return `${what}: waiting ${Math.round(waitMs / 1000)}s (${why}), until ${localClock(untilMs)}`;
}

/** `gave up after 9.8s (redis.connect_timeout 10s)`: the time waited, measured, beside the bound that ended it. */
export function gaveUpAfter(waitedMs: number, bound: string): string {
  return `gave up after ${(Math.max(0, waitedMs) / 1000).toFixed(1)}s (${bound})`;
}

/** `14:03:07`, the time of day where the person reading is. */
function localClock(ms: number): string {
  const at = new Date(ms);
  return [at.getHours(), at.getMinutes(), at.getSeconds()].map((part) => String(part).padStart(2, '0')).join(':');
}
