import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import type { ActionRecord, Outcome } from '../decision';
import { EngineKeys } from './keys';

/** One half-done change of the bot's own that its last acting pass did not mend (Decision.repairs). */
export interface OpenHarm {
  /** The policy type's HarmKind: `branch_unprotected`. */
  readonly kind: string;
  /** For people: `acme/api protected branch main`. */
  readonly target: string;
  /** The decision's reason: what is wrong and how it is mended. */
  readonly reason: string;
  /** When a pass first found it open, ISO 8601. */
  readonly since: string;
  /** What became of the last repair: `failed: POST … → 403`, `paused since …`, `would act (dry run)`. */
  readonly last: string;
}

/**
 * Outcomes after which the harm is no longer there: mended, gone with its target, or changed by someone meanwhile. A
 * skip that names a harm is one the pass knows of and cannot mend now (its project out of sight): still open.
 */
const MENDED: ReadonlySet<Outcome> = new Set<Outcome>(['done', 'duplicate', 'gone', 'stale']);

/**
 * The bot's own harm left open, by policy, cluster-wide: one Redis hash that an acting pass rewrites with what its
 * repairs did not mend, and that every replica's gauge, console and `doctor` read alike.
 */
@Injectable()
export class OwnHarm {
  private readonly key: string;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.key = EngineKeys.of(config).ownHarm();
  }

  /** The pass's repairs that did not mend their harm replace the policy's list; each keeps when it was first seen. */
  async replace(policy: string, records: readonly ActionRecord[], now: Date): Promise<OpenHarm[]> {
    const before = new Map(
      (await this.of(policy)).map((harm) => [`${harm.kind}\n${harm.target}`, harm.since] as const),
    );
    const open: OpenHarm[] = [];
    for (const { decision, outcome, detail, leftHarm } of records) {
      if (leftHarm) {
        const since = before.get(`${leftHarm.kind}\n${decision.target}`) ?? now.toISOString();
        open.push({
          kind: leftHarm.kind,
          target: decision.target,
          reason: leftHarm.what,
          since,
          last: `${outcome.replace('_', ' ')}${detail ? `: ${detail}` : ''}`,
        });
        continue;
      }
      if (decision.repairs === undefined || MENDED.has(outcome)) continue;
      const since = before.get(`${decision.repairs}\n${decision.target}`) ?? now.toISOString();
      open.push({
        kind: decision.repairs,
        target: decision.target,
        reason: decision.reason,
        since,
        last: `${outcome.replace('_', ' ')}${detail ? `: ${detail}` : ''}`,
      });
    }
    if (open.length === 0) await this.redis.hdel(this.key, policy);
    else await this.redis.hset(this.key, policy, JSON.stringify(open));
    return open;
  }

  async of(policy: string): Promise<OpenHarm[]> {
    return readHarms(await this.redis.hget(this.key, policy));
  }

  /** Every policy's open harm. */
  async all(): Promise<Map<string, OpenHarm[]>> {
    const fields = await this.redis.hgetall(this.key);
    return new Map(Object.entries(fields).map(([policy, text]) => [policy, readHarms(text)] as const));
  }

  /** Forgets a policy's list (the policy was removed from the file). */
  async forget(policy: string): Promise<void> {
    await this.redis.hdel(this.key, policy);
  }
}

/** A damaged entry still says harm is open: hiding it would be worse than a vague line. */
function readHarms(text: string | null): OpenHarm[] {
  if (text === null) return [];
  try {
    const raw = JSON.parse(text) as unknown;
    if (!Array.isArray(raw)) throw new TypeError('not a list');
    return raw.map((entry: Partial<OpenHarm>) => ({
      kind: String(entry.kind ?? 'unknown'),
      target: String(entry.target ?? ''),
      reason: String(entry.reason ?? ''),
      since: String(entry.since ?? ''),
      last: String(entry.last ?? ''),
    }));
  } catch {
    return [
      { kind: 'unknown', target: '(the record of open harm could not be read)', reason: '', since: '', last: '' },
    ];
  }
}
