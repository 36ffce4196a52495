import type { MovableClock } from '../clock';
import type { SandboxIds } from './ids';
import { resolveTimestamp, type ParsedWorld } from './world';

export const DAY_MS = 24 * 60 * 60 * 1000;

/** What every area needs to seed its slice of the world: the id sequences and the world's timestamps resolved. */
export class WorldSeeding {
  /** The clock's start, against which relative world timestamps (`now-3d`) resolve. */
  private readonly startMs: number;

  constructor(
    world: ParsedWorld,
    readonly ids: SandboxIds,
    private readonly clock: MovableClock,
  ) {
    // The world's own `now` exactly: read back from the running clock it would be a few milliseconds later on a busy
    // machine, and `now-3d` in the file would not be three days before `now`.
    this.startMs = world.now ? Date.parse(world.now) : clock.now();
  }

  /** An ISO 8601 or relative (`now-3d`) timestamp of the world file, as ISO 8601. */
  time(value: string): string {
    return resolveTimestamp(value, this.startMs);
  }

  /** `ms` before the clock's start: how old records are that the world gives no timestamp. */
  ago(ms: number): string {
    return new Date(this.startMs - ms).toISOString();
  }

  /** An optional, nullable timestamp: omitted gives `fallback`, null stays null. */
  timeOrNull(value: string | null | undefined, fallback: string | null): string | null {
    return value === undefined ? fallback : value === null ? null : this.time(value);
  }

  /** The running clock's time, for records made "as the world is served" rather than at its start. */
  now(): string {
    return this.clock.date().toISOString();
  }
}
