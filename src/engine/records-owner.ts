import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { AuditTrail } from './stores/audit';
import { DataMarker } from './stores/data-marker';
import { type ForgeFingerprint, RecordedForge, type RecordedForgeEntry } from './stores/recorded-forge';

/** What became of the records when a command met the forge. */
export type RecordsSettled =
  | { readonly state: 'first' | 'same' }
  | {
      readonly state: 'dropped';
      readonly previous: RecordedForgeEntry;
      readonly keys: number;
      readonly reset: boolean;
    };

/**
 * Ties the records in Redis to the forge they were made against. A command that meets a forge other than the one its
 * records describe (GITLAB_URL pointed elsewhere with the same prefix, or the same forge reset: a sandbox restarted
 * with a fresh world) drops them and starts afresh, as after Redis lost its data: the schedules are made again and
 * the forge is read anew, so nothing is decided on a job, key or request of another forge that happens to share an
 * id. The audit trail starts with an entry that says so.
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

  /**
   * Whether the records are this forge's, made so when they are another's (see the class). `claim: false` (a command
   * that changes nothing) leaves records no forge has claimed yet as they are.
   */
  async settle(current: ForgeFingerprint, options: { claim?: boolean } = {}): Promise<RecordsSettled> {
    const now = new Date(this.clock.now());
    const found = await this.recorded.compare(current, now, options.claim ?? true);
    if (!('previous' in found)) return found;
    const keys = await this.recorded.startAfresh(current, now);
    const reset = found.state === 'reset';
    // Another forge's: this forge's own limits that only the records knew (the hourly bulk tag deletion) are unknown
    // now, as after a loss. A reset forge forgot its limits itself: nothing is held back that it would allow.
    await this.marker.markForgeChanged(now, !reset);
    const reason = reset
      ? `the forge at ${current.url} was reset: its user ${current.userId} was made at ${current.userCreatedAt}, not at ${found.previous.userCreatedAt} as when the records began (${found.previous.since})`
      : `Redis held the records of another forge: ${describeForge(found.previous)}, since ${found.previous.since}`;
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
    if (reset) this.logger.warn(`${reason}; dropped its records (${keys} keys) and started afresh`);
    else
      this.logger.warn(
        `${reason}; dropped them (${keys} keys) and started afresh for ${describeForge(current)}. Give each forge a redis.prefix of its own.`,
      );
    return { state: 'dropped', previous: found.previous, keys, reset };
  }
}

function describeForge(forge: ForgeFingerprint): string {
  return `${forge.url} (token of user ${forge.userId}, made ${forge.userCreatedAt})`;
}
