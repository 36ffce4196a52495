import { performance } from 'node:perf_hooks';

/**
 * The one sense of time for the daemon, its API client and the sandbox. Everything that reads the time, waits, or
 * draws jitter takes a `Clock`, so tests can move time (across the hour of the bulk-deletion limit, past a grace
 * period) without waiting, and the client's retries can run on a fake clock that never sleeps.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Milliseconds from an arbitrary origin, moving only forward at real speed: deadlines and durations are measured on
   * it, so a step of the wall clock (NTP, a resumed VM) neither cuts a retry budget short nor stretches it.
   */
  monotonic(): number;
  /** Waits `ms` of this clock's time. */
  sleep(ms: number): Promise<void>;
  /** Uniform in [0, 1): the jitter of backoffs. */
  random(): number;
}

/** The Nest injection token of the daemon's clock (a symbol, so this file needs no Nest). */
export const CLOCK = Symbol('Clock');

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: realSleep,
  random: () => Math.random(),
};

/**
 * Real time from a chosen start, movable forward or set: the sandbox's clock (moved through its control API) and
 * the daemon's clock in tests that move both together. It runs on between moves, so timeouts still mean something.
 */
export class MovableClock implements Clock {
  private offsetMs: number;

  constructor(start?: Date | number) {
    this.offsetMs = start === undefined ? 0 : new Date(start).getTime() - Date.now();
  }

  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves of this clock are steps of its wall clock: durations go on at real speed. */
  monotonic(): number {
    return performance.now();
  }

  /** `now()` as a Date, for the code that stamps records. */
  date(): Date {
    return new Date(this.now());
  }

  sleep(ms: number): Promise<void> {
    return realSleep(ms);
  }

  random(): number {
    return Math.random();
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }

  set(now: Date | number): void {
    this.offsetMs = new Date(now).getTime() - Date.now();
  }
}
