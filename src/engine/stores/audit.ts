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

/** An entry's id as Redis writes it: `<milliseconds>-<sequence>`. */
export const AUDIT_ID = /^\d{1,15}-\d{1,19}$/;

/** An entry with its place in the stream (`1764259200000-0`): a link to it, and where the next page starts. */
export interface StoredAuditEntry extends AuditEntry {
  readonly id: string;
}

/** Which entries a page holds: each field given must match (the text anywhere in the target, in any case). */
export interface AuditFilter {
  readonly policy?: string;
  readonly outcome?: string;
  readonly action?: string;
  readonly text?: string;
  /** Epoch ms, inclusive. */
  readonly fromMs?: number;
  /** Epoch ms, inclusive. */
  readonly toMs?: number;
}

export interface AuditPage {
  /** Newest first. */
  readonly entries: StoredAuditEntry[];
  /** Where the next (older) page starts, exclusive; absent when the trail holds nothing older that could match. */
  readonly before?: string;
  /** Entries read to fill the page. */
  readonly scanned: number;
  /** Set when the scan stopped at its bound before the page was full: older entries were not searched yet. */
  readonly stoppedAt?: string;
}

/**
 * Entries read from Redis per round trip while a filter looks for matches. Parsing the entries is most of a scan's
 * cost, and smaller replies keep the garbage of each one young (docs/benchmarks.md, the console rows).
 */
const SCAN_CHUNK = 500;

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
    return rows.map(([id, values]) => {
      const { id: _id, ...entry } = readEntry(id, values);
      return entry;
    });
  }

  /** One entry by its id, or undefined when it is not (or no longer) in the trail. */
  async entry(id: string): Promise<StoredAuditEntry | undefined> {
    if (!AUDIT_ID.test(id)) return undefined;
    const rows = await this.redis.xrange(this.key, id, id);
    const row = rows[0];
    return row ? readEntry(row[0], row[1]) : undefined;
  }

  /**
   * A page of entries, newest first, that match `filter`, older than `before` when given. The time range is Redis's
   * own (entry ids are times); the other fields are matched while reading back through the trail, at most
   * `scanLimit` entries for one page, so a filter nothing matches answers as fast as one that matches everything: the
   * page then says where it stopped, and the next one goes on from there.
   */
  async page(filter: AuditFilter, options: { limit: number; before?: string; scanLimit: number }): Promise<AuditPage> {
    const entries: StoredAuditEntry[] = [];
    const start = filter.fromMs !== undefined ? String(Math.max(0, Math.floor(filter.fromMs))) : '-';
    let end =
      options.before !== undefined
        ? `(${options.before}`
        : filter.toMs !== undefined
          ? String(Math.max(0, Math.floor(filter.toMs)))
          : '+';
    const filtered =
      filter.policy !== undefined ||
      filter.outcome !== undefined ||
      filter.action !== undefined ||
      filter.text !== undefined;
    const text = filter.text?.toLowerCase();
    let scanned = 0;
    let lastId: string | undefined;
    for (;;) {
      const want = filtered ? Math.min(SCAN_CHUNK, options.scanLimit - scanned) : options.limit - entries.length;
      const rows = await this.redis.xrevrange(this.key, end, start, 'COUNT', want);
      for (const [id, values] of rows) {
        scanned++;
        lastId = id;
        const entry = readEntry(id, values);
        if (filter.policy !== undefined && entry.policy !== filter.policy) continue;
        if (filter.outcome !== undefined && entry.outcome !== filter.outcome) continue;
        if (filter.action !== undefined && entry.action !== filter.action) continue;
        if (text !== undefined && !entry.target.toLowerCase().includes(text)) continue;
        entries.push(entry);
        if (entries.length === options.limit) return { entries, before: id, scanned };
      }
      // The trail holds nothing older in the range.
      if (rows.length < want || lastId === undefined) return { entries, scanned };
      if (scanned >= options.scanLimit) return { entries, before: lastId, scanned, stoppedAt: lastId };
      end = `(${lastId}`;
    }
  }
}

function readEntry(id: string, values: readonly string[]): StoredAuditEntry {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < values.length; i += 2) record[values[i]] = values[i + 1]!;
  return {
    id,
    time: record.time ?? '',
    policy: record.policy ?? '',
    target: record.target ?? '',
    action: record.action ?? '',
    reason: record.reason ?? '',
    outcome: record.outcome ?? '',
    dry_run: record.dry_run === 'true',
    ...(record.detail !== undefined ? { detail: record.detail } : {}),
  };
}
