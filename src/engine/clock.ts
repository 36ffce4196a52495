/** The daemon's sense of time. One provider, so tests can move it (with the sandbox's clock) across an hour. */
export const CLOCK = Symbol('Clock');

export interface Clock {
  now(): Date;
  /** Waits `ms` of this clock's time; real time when a clock leaves it out. */
  sleep?(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export function sleepOn(clock: Clock, ms: number): Promise<void> {
  return clock.sleep ? clock.sleep(ms) : new Promise((resolve) => setTimeout(resolve, ms));
}
