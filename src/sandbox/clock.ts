/**
 * The sandbox's own time. It runs with the real clock from a chosen start and can be moved forward (or set) through
 * the control API, so tests reach "an hour later" (the bulk-deletion limit, `older_than`) without waiting.
 */
export class SandboxClock {
  private offsetMs: number;

  constructor(start?: Date) {
    this.offsetMs = start ? start.getTime() - Date.now() : 0;
  }

  now(): Date {
    return new Date(this.nowMs());
  }

  nowMs(): number {
    return Date.now() + this.offsetMs;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }

  set(now: Date): void {
    this.offsetMs = now.getTime() - Date.now();
  }
}
