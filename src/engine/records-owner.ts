import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { AuditTrail } from './stores/audit';
import { DataMarker } from './stores/data-marker';
import { type ForgeFingerprint, RecordedForge, type RecordedForgeEntry } from './stores/recorded-forge';

/** What became of the records when a command met the forge. */
export type RecordsSettled =
  | { readonly state: 'first' | 'same' }
  | { readonly state: 'dropped'; readonly previous: RecordedForgeEntry; readonly keys: number };

/**
 * Ties the records in Redis to the forge they were made against. A command that meets a forge other than the one its
 * records describe (a sandbox restarted with a fresh world, GITLAB_URL pointed elsewhere with the same prefix) drops
 * them and starts afresh, as after Redis lost its data: the schedules are made again and the forge is read anew, so
 * nothing is decided on a job, key or request of another forge that happens to share an id. The audit trail starts
 * with an entry that says so.
 */
@Injectable()
export class RecordsOwner {
  private readonly logger = new Logger('Records');

  constructor(
    private readonly recorded: RecordedForge,
    private readonly marker: DataMarker,
    private readonly audit: AuditTrail,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** Whether the records are this forge's, made so when they are another's (see the class). */
  async settle(current: ForgeFingerprint): Promise<RecordsSettled> {
    const now = new Date(this.clock.now());
    const found = await this.recorded.compare(current, now);
    if (found.state !== 'another') return found;
    const keys = await this.recorded.startAfresh(current, now);
    // This forge's own limits that only the records knew (the hourly bulk tag deletion) are unknown now, as after a loss.
    await this.marker.markLost(now);
    const reason = `Redis held the records of another forge: ${describeForge(found.previous)}, since ${found.previous.since}`;
    await this.audit.record({
      time: now.toISOString(),
      policy: '-',
      target: `forge ${current.url}`,
      action: 'start_afresh',
      reason,
      outcome: 'done',
      dry_run: false,
      detail: `${keys} keys dropped; this forge: ${describeForge(current)}`,
    });
    this.logger.warn(`${reason}; dropped them (${keys} keys) and started afresh for ${describeForge(current)}. Give each forge a redis.prefix of its own.`);
    return { state: 'dropped', previous: found.previous, keys };
  }
}

function describeForge(forge: ForgeFingerprint): string {
  return `${forge.url} (token of user ${forge.userId}, made ${forge.userCreatedAt})`;
}
