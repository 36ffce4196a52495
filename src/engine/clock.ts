/** The daemon's sense of time. One provider, so tests can move it (with the sandbox's clock) across an hour. */
export const CLOCK = Symbol('Clock');

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
