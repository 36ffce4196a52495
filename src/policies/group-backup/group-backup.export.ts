import { forgeTurn } from '../../engine/forge-turn';
import type { ForgeLimit, ForgeSlot, ActContext } from '../../engine/policy';
import { type ArchiveCheck, verifyArchive } from './group-backup.archive';
import { putInPlace } from './group-backup.disk';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * The steps every export of a set goes through, the group's and each project's: its request paced by the forge's
 * limit of its kind, looks at it (a download tried, a status read) `download_interval` apart and the first a few
 * seconds after the request, a wait longer than `timeout` given up, and the archive downloaded under a dot-name,
 * verified as a gzip tar, flushed and renamed into place. The group's export is waited for alone; the projects' are
 * looked at side by side (group-backup.projects.ts).
 */

/** The first look at an export comes this soon after its request (a small group or project is ready in seconds). */
const FIRST_LOOK_MS = 5_000;

export class ForgeExports {
  constructor(
    private readonly config: Pick<GroupBackupConfig, 'download_interval' | 'timeout'>,
    private readonly context: ActContext,
  ) {}

  /** Waits until a request of `limit` is within the forge's limit, counted for every replica, and takes it. */
  turn(limit: ForgeLimit): Promise<ForgeSlot> {
    return forgeTurn(this.context.forgeLimits, limit, this.context.clock);
  }

  /** A request of `limit` taken now, or the wait until one can be (nothing taken): for a caller with other exports to look at. */
  take(limit: ForgeLimit): Promise<ForgeSlot> {
    return this.context.forgeLimits.take(limit, this.context.clock.now());
  }

  /** When an export requested at `requestedAt` and last looked at `lookedAt` (milliseconds) is looked at next. */
  lookDueAt(requestedAt: number, lookedAt: number | undefined): number {
    if (lookedAt === undefined) return requestedAt + Math.min(FIRST_LOOK_MS, this.config.download_interval);
    return lookedAt + this.config.download_interval;
  }

  /** Whether an export requested at `requestedAt` has been waited for longer than `timeout`. */
  overdue(requestedAt: number): boolean {
    return this.context.clock.now().getTime() - requestedAt > this.config.timeout;
  }

  /** What an overdue export is: `not ready 60 min after it was requested`. */
  get notReady(): string {
    return `not ready ${Math.round(this.config.timeout / 60_000)} min after it was requested`;
  }

  /** A download checked as a whole gzip tar; one that is not (or cannot be read) is removed, and the error thrown. */
  async verified(partial: string): Promise<ArchiveCheck> {
    try {
      return await verifyArchive(this.context.files, partial);
    } catch (error) {
      await this.context.files.remove(partial);
      throw error;
    }
  }

  /** The verified download under its final name (see putInPlace). */
  placed(partial: string, final: string): Promise<void> {
    return putInPlace(this.context.files, partial, final);
  }
}
