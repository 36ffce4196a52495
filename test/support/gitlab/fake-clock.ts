import type { Clock } from '../../../src/clock';

/**
 * A deterministic clock for unit tests. `sleep` records the wait and resolves without real waiting: pending sleeps
 * fire one per macrotask in deadline order, moving time forward to each deadline, like timers on a fast machine.
 */
export class FakeClock implements Clock {
  readonly sleeps: number[] = [];
  private timers: Array<{ at: number; seq: number; resolve: () => void }> = [];
  private seq = 0;
  private ticking = false;

  constructor(
    public time = Date.UTC(2024, 0, 1, 12, 0, 0),
    public randomValue = 0.5,
  ) {}

  now(): number {
    return this.time;
  }

  /** Time here moves by sleeps and by tests setting `time`: the retry tests that read this move it only forward. */
  monotonic(): number {
    return this.time;
  }

  sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    return new Promise<void>((resolve) => {
      this.timers.push({ at: this.time + ms, seq: this.seq++, resolve });
      this.tick();
    });
  }

  random(): number {
    return this.randomValue;
  }

  private tick(): void {
    if (this.ticking) return;
    this.ticking = true;
    setImmediate(() => {
      this.ticking = false;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift();
      if (!next) return;
      this.time = Math.max(this.time, next.at);
      next.resolve();
      if (this.timers.length) this.tick();
    });
  }
}
