import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { redisKeyPrefix } from '../../redis/connection';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { scanKeys } from '../../redis/topology';
import { readJsonObject } from '../json';
import { EngineKeys } from './keys';

/**
 * What tells one forge from another, as the token sees it: its URL, and the token's user with the time that user was
 * made. A forge rebuilt at the same URL (a sandbox restarted, a staging instance restored from elsewhere) has other
 * users, or the same ids made at other times; a real forge keeps its users.
 */
export interface ForgeFingerprint {
  readonly url: string;
  readonly userId: number;
  readonly userCreatedAt: string;
}

/** The forge the records were made against, and since when. */
export interface RecordedForgeEntry extends ForgeFingerprint {
  readonly since: string;
}

export type ForgeComparison =
  | { readonly state: 'first' | 'same' }
  | { readonly state: 'another'; readonly previous: RecordedForgeEntry };

/** Keys deleted per command while records are dropped: bounded, so a large keyspace does not block Redis. */
const DELETE_BATCH = 500;

/**
 * Which forge the records under this prefix (ledgers, open targets, rotations, marks, schedules, the audit trail)
 * were made against. Records made against another forge are no evidence about this one: a job id, a key id or a
 * request id there names something else here, and acting on them is acting on a belief this forge never held.
 */
@Injectable()
export class RecordedForge {
  private readonly keys: EngineKeys;
  private readonly prefix: string;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
    this.prefix = redisKeyPrefix(config.redis);
  }

  /** Claims the records for `current` when none has them; says whether another forge had them. */
  async compare(current: ForgeFingerprint, now: Date): Promise<ForgeComparison> {
    const entry: RecordedForgeEntry = { ...current, since: now.toISOString() };
    if ((await this.redis.set(this.keys.recordedForge(), JSON.stringify(entry), 'NX')) === 'OK') return { state: 'first' };
    const previous = parseEntry(await this.redis.get(this.keys.recordedForge()));
    // Unreadable (written by hand, or cut short) is no forge's: claimed for this one, like a first start.
    if (!previous) {
      await this.redis.set(this.keys.recordedForge(), JSON.stringify(entry));
      return { state: 'first' };
    }
    return sameForge(previous, current) ? { state: 'same' } : { state: 'another', previous };
  }

  /**
   * Drops every record under the prefix, as if Redis had lost its data (the path the daemon takes then: schedules made
   * again, the forge read afresh), and claims the records for `current`. Returns how many keys went.
   */
  async startAfresh(current: ForgeFingerprint, now: Date): Promise<number> {
    let removed = 0;
    for await (const batch of scanKeys(this.redis, `${this.prefix}:*`, DELETE_BATCH)) {
      if (batch.length > 0) removed += await this.redis.unlink(...batch);
    }
    await this.redis.set(this.keys.recordedForge(), JSON.stringify({ ...current, since: now.toISOString() }));
    return removed;
  }
}

function sameForge(a: ForgeFingerprint, b: ForgeFingerprint): boolean {
  return normalisedUrl(a.url) === normalisedUrl(b.url) && a.userId === b.userId && a.userCreatedAt === b.userCreatedAt;
}

/** `https://Forge.example.com/` and `https://forge.example.com` are one forge. */
function normalisedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host.toLowerCase()}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return url;
  }
}

function parseEntry(text: string | null): RecordedForgeEntry | undefined {
  const value = readJsonObject(text ?? undefined);
  if (!value) return undefined;
  const { url, userId, userCreatedAt, since } = value;
  if (typeof url !== 'string' || typeof userId !== 'number' || typeof userCreatedAt !== 'string' || typeof since !== 'string') return undefined;
  return { url, userId, userCreatedAt, since };
}
