import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { EngineKeys } from './keys';

/** Passes kept per policy: what the console's policy page lists. */
export const PASSES_KEPT = 20;

/** One acting pass of a policy, as the console shows it. */
export interface PassEntry {
  /** ISO 8601. */
  readonly started: string;
  readonly took_ms: number;
  /** What started it: the daemon's schedule, or a person's `once`. */
  readonly occasion: string;
  /** ok; partial: some targets were not read or an action was refused for good; failed: the pass as a whole. */
  readonly result: 'ok' | 'partial' | 'failed';
  readonly dry_run: boolean;
  /** Decisions by outcome (skipped, done, would_act, failed, paused...). */
  readonly outcomes: Readonly<Record<string, number>>;
  /** What the pass looked at, in the policy's words. */
  readonly summary?: string;
  /** Why the pass failed, or which targets could not be read. */
  readonly error?: string;
  /** When the pass asked for the next one sooner than its trigger (open targets, a follow-up), ISO 8601. */
  readonly next_pass?: string;
  /** The replica that ran it (host:pid). */
  readonly replica: string;
}

/** Each policy's last passes, newest first, in one capped Redis list per policy. */
@Injectable()
export class PassLog {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  async record(policy: string, entry: PassEntry): Promise<void> {
    const key = this.keys.passLog(policy);
    await this.redis
      .multi()
      .lpush(key, JSON.stringify(entry))
      .ltrim(key, 0, PASSES_KEPT - 1)
      .exec();
  }

  /** The policy's last passes, newest first. */
  async recent(policy: string, limit = PASSES_KEPT): Promise<PassEntry[]> {
    const texts = await this.redis.lrange(this.keys.passLog(policy), 0, limit - 1);
    return texts.flatMap((text) => readEntry(text) ?? []);
  }

  /** The last pass of each policy named, in one round trip. */
  async latest(policies: readonly string[]): Promise<Map<string, PassEntry>> {
    if (policies.length === 0) return new Map();
    const batch = this.redis.pipeline();
    for (const policy of policies) batch.lindex(this.keys.passLog(policy), 0);
    const answers = (await batch.exec()) ?? [];
    const found = new Map<string, PassEntry>();
    policies.forEach((policy, index) => {
      const [error, text] = answers[index] ?? [];
      const entry = !error && typeof text === 'string' ? readEntry(text) : undefined;
      if (entry) found.set(policy, entry);
    });
    return found;
  }
}

function readEntry(text: string): PassEntry | undefined {
  try {
    const entry = JSON.parse(text) as PassEntry;
    return typeof entry.started === 'string' && typeof entry.result === 'string' ? entry : undefined;
  } catch {
    return undefined;
  }
}
