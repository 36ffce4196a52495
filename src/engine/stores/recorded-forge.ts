import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { readJsonObject } from '../json';
import { EngineKeys } from './keys';
import { PrefixKeys } from './prefix-keys';

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

/**
 * `reset`: the same URL and the same user id, made at another time: the forge was rebuilt there (a sandbox restarted
 * with its world, a staging forge restored), as against `another` forge altogether.
 */
export type ForgeComparison =
  { readonly state: 'first' | 'same' } | { readonly state: 'another' | 'reset'; readonly previous: RecordedForgeEntry };

/**
 * Which forge the records under this prefix (ledgers, open targets, rotations, marks, schedules, the audit trail)
 * were made against. Records made against another forge are no evidence about this one: a job id, a key id or a
 * request id there names something else here, and acting on them is acting on a belief this forge never held.
 */
@Injectable()
export class RecordedForge {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly keysOfPrefix: PrefixKeys,
  ) {
    this.keys = EngineKeys.of(config);
  }

  /**
   * Claims the records for `current` when none has them (unless `claim` is false: a command that changes nothing
   * leaves that to the next that acts); says whether another forge had them, or this one before it was reset.
   */
  async compare(current: ForgeFingerprint, now: Date, claim = true): Promise<ForgeComparison> {
    const entry: RecordedForgeEntry = { ...current, since: now.toISOString() };
    const text =
      claim && (await this.redis.set(this.keys.recordedForge(), JSON.stringify(entry), 'NX')) === 'OK'
        ? undefined
        : await this.redis.get(this.keys.recordedForge());
    if (text === undefined || text === null) return { state: 'first' };
    const previous = parseEntry(text);
    // Unreadable (written by hand, or cut short) is no forge's: claimed for this one, like a first start.
    if (!previous) {
      if (claim) await this.redis.set(this.keys.recordedForge(), JSON.stringify(entry));
      return { state: 'first' };
    }
    if (sameForge(previous, current)) return { state: 'same' };
    return {
      state:
        normalisedUrl(previous.url) === normalisedUrl(current.url) && previous.userId === current.userId
          ? 'reset'
          : 'another',
      previous,
    };
  }

  /**
   * Drops every record under the prefix, as if Redis had lost its data (the path the daemon takes then: schedules made
   * again, the forge read afresh), and claims the records for `current`. Returns how many keys went.
   */
  async startAfresh(current: ForgeFingerprint, now: Date): Promise<number> {
    const removed = await this.keysOfPrefix.removeAll();
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
  if (
    typeof url !== 'string' ||
    typeof userId !== 'number' ||
    typeof userCreatedAt !== 'string' ||
    typeof since !== 'string'
  )
    return undefined;
  return { url, userId, userCreatedAt, since };
}
