import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { redactor } from '../../logging/redact';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { EngineKeys } from './keys';

/** Entries kept; the stream is trimmed approximately, which Redis does cheaply. */
const AUDIT_MAX_ENTRIES = 100_000;

/** One action or would-be action, as the audit trail keeps it. */
export interface AuditEntry {
  readonly time: string;
  readonly policy: string;
  readonly target: string;
  readonly action: string;
  readonly reason: string;
  /** done, would_act (dry run), duplicate, gone, failed, scheduled, deferred */
  readonly outcome: string;
  readonly dry_run: boolean;
  readonly detail?: string;
}

const FIELDS = ['time', 'policy', 'target', 'action', 'reason', 'outcome', 'dry_run', 'detail'] as const;

/** The audit trail: a capped Redis stream that every replica appends to and `forgewarden audit` reads. */
@Injectable()
export class AuditTrail {
  private readonly key: string;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.key = EngineKeys.of(config).audit();
  }

  async record(entry: AuditEntry): Promise<void> {
    const fields: string[] = [];
    for (const field of FIELDS) {
      const value = entry[field];
      if (value === undefined) continue;
      // Reasons and details may quote forge output; nothing secret goes into the trail.
      fields.push(field, redactor.redactText(String(value)));
    }
    await this.redis.xadd(this.key, 'MAXLEN', '~', String(AUDIT_MAX_ENTRIES), '*', ...fields);
  }

  /** Entries since `sinceMs` (epoch ms), oldest first, at most `limit`. */
  async read(sinceMs: number, limit = 10_000): Promise<AuditEntry[]> {
    const rows = await this.redis.xrange(this.key, `${Math.max(0, Math.floor(sinceMs))}-0`, '+', 'COUNT', limit);
    return rows.map(([, values]) => {
      const record: Record<string, string> = {};
      for (let i = 0; i + 1 < values.length; i += 2) record[values[i]] = values[i + 1]!;
      return {
        time: record.time ?? '',
        policy: record.policy ?? '',
        target: record.target ?? '',
        action: record.action ?? '',
        reason: record.reason ?? '',
        outcome: record.outcome ?? '',
        dry_run: record.dry_run === 'true',
        ...(record.detail !== undefined ? { detail: record.detail } : {}),
      };
    });
  }
}
