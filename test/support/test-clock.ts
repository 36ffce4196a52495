import type { Clock } from '../../src/engine/clock';

/** The app's clock in integration tests: starts with the sandbox's and is moved with it. */
export class TestClock implements Clock {
  private offsetMs: number;

  constructor(start: Date) {
    this.offsetMs = start.getTime() - Date.now();
  }

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
