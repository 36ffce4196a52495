import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { MetricsService } from '../../metrics/metrics.service';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import type { ActionRecord, Outcome, Refusal, UnsettledTarget } from '../policy';
import { EngineKeys } from './keys';

/**
 * Outcomes that leave a target's decision open: the action failed or may have failed, was refused (parked), waits (a
 * delay, the per-run cap, the forge's own limit, a pause), is under way elsewhere, or its outcome is not known yet. Such a
 * target is looked at again by the next acting pass, whatever a policy's progress marks (watermarks) say.
 */
const UNSETTLED: ReadonlySet<Outcome> = new Set<Outcome>([
  'failed',
  'refused',
  'scheduled',
  'deferred',
  'rate_limited',
  'in_progress',
  'uncertain',
  'paused',
]);

export function isUnsettled(outcome: Outcome): boolean {
  return UNSETTLED.has(outcome);
}

/** Open targets that want a pass soon: all but the parked ones, which wait out their own backoff. */
export function wantsRetry(target: UnsettledTarget): boolean {
  return target.outcome !== 'refused';
}

/**
 * Each policy's unsettled targets, one Redis hash per policy (field: the decision's key). An acting pass replaces
 * the whole set with the targets it left open: a target settled since, or no longer decided on at all (gone from
 * the forge, out of the policy's scope), drops out. Only one pass of a policy runs at a time (the pass lease), so
 * replacing never races another pass.
 */
@Injectable()
export class UnsettledTargets {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly metrics: MetricsService,
  ) {
    this.keys = EngineKeys.of(config);
  }

  async read(policy: string): Promise<UnsettledTarget[]> {
    const fields = await this.redis.hgetall(this.keys.unsettled(policy));
    const targets: UnsettledTarget[] = [];
    for (const [key, text] of Object.entries(fields)) {
      const target = parseTarget(key, text);
      if (target) targets.push(target);
    }
    return targets.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** The refusal a key is parked with, if it is. */
  async refusal(policy: string, key: string): Promise<Refusal | undefined> {
    const text = await this.redis.hget(this.keys.unsettled(policy), key);
    return text === null ? undefined : parseTarget(key, text)?.refusal;
  }

  /**
   * The set after an acting pass: the records with an unsettled outcome; `since` is kept for targets open before.
   * Targets a webhook's pass opened while this pass ran (in Redis now, not in `previous`, not decided here) stay. A
   * `partial` pass (some targets could not be read) keeps every earlier open target it did not decide on: it may
   * belong to a target that was not read, and is looked at again when that target is.
   */
  async replace(
    policy: string,
    records: readonly ActionRecord[],
    previous: readonly UnsettledTarget[],
    now: Date,
    options: { partial?: boolean } = {},
  ): Promise<UnsettledTarget[]> {
    const open = openTargets(records, previous, now);
    const key = this.keys.unsettled(policy);
    const decided = new Set(records.map((record) => record.decision.key));
    const kept = options.partial ? previous.filter((target) => !decided.has(target.key)) : [];
    for (const target of kept) open.set(target.key, target);
    const known = new Set(previous.map((target) => target.key));
    const meanwhile = (await this.redis.hkeys(key)).filter(
      (field) => !known.has(field) && !open.has(field) && !decided.has(field),
    );
    const write = this.redis.multi();
    const gone = [...known].filter((field) => !open.has(field));
    const settledHere = records.filter((record) => !isUnsettled(record.outcome)).map((record) => record.decision.key);
    const drop = [...new Set([...gone, ...settledHere])];
    if (drop.length > 0) write.hdel(key, ...drop);
    if (open.size > 0)
      write.hset(key, Object.fromEntries([...open].map(([field, target]) => [field, JSON.stringify(target)])));
    await write.exec();
    this.metrics.unsettledTargets.set({ policy }, open.size + meanwhile.length);
    this.metrics.targetsRefused.set(
      { policy },
      [...open.values()].filter((target) => target.outcome === 'refused').length,
    );
    return [...open.values()];
  }

  /** How many targets each policy named has open, in one round trip (the console's overview). */
  async sizes(policies: readonly string[]): Promise<Map<string, number>> {
    if (policies.length === 0) return new Map();
    const batch = this.redis.pipeline();
    for (const policy of policies) batch.hlen(this.keys.unsettled(policy));
    const answers = (await batch.exec()) ?? [];
    return new Map(policies.map((policy, index) => [policy, Number(answers[index]?.[1] ?? 0) || 0]));
  }

  /** How many targets are open, and how many of them parked after a refusal (for the gauges, cluster-wide). */
  async counts(policy: string): Promise<{ open: number; refused: number }> {
    const values = await this.redis.hvals(this.keys.unsettled(policy));
    return {
      open: values.length,
      refused: values.filter((text) => parseTarget('', text)?.outcome === 'refused').length,
    };
  }

  /**
   * After a webhook's pass, which looked at a few targets only: those it left open are added, those it settled
   * dropped, and every other target stays as the last full pass left it.
   */
  async merge(policy: string, records: readonly ActionRecord[], now: Date): Promise<void> {
    if (records.length === 0) return;
    const key = this.keys.unsettled(policy);
    const previous = await this.read(policy);
    const open = openTargets(records, previous, now);
    const settled = records.filter((record) => !isUnsettled(record.outcome)).map((record) => record.decision.key);
    const write = this.redis.multi();
    if (settled.length > 0) write.hdel(key, ...settled);
    if (open.size > 0)
      write.hset(key, Object.fromEntries([...open].map(([field, target]) => [field, JSON.stringify(target)])));
    await write.exec();
  }
}

/** The records with an unsettled outcome, by key; `since` is kept for targets that were open before. */
function openTargets(
  records: readonly ActionRecord[],
  previous: readonly UnsettledTarget[],
  now: Date,
): Map<string, UnsettledTarget> {
  const since = new Map(previous.map((target) => [target.key, target.since]));
  const open = new Map<string, UnsettledTarget>();
  for (const { decision, outcome, refusal, detail } of records) {
    if (!isUnsettled(outcome)) continue;
    open.set(decision.key, {
      key: decision.key,
      action: decision.action,
      target: decision.target,
      params: decision.params,
      outcome,
      since: since.get(decision.key) ?? now.toISOString(),
      ...(detail !== undefined ? { detail } : {}),
      ...(outcome === 'refused' && refusal ? { refusal } : {}),
    });
  }
  return open;
}

function parseTarget(key: string, text: string): UnsettledTarget | undefined {
  try {
    const raw = JSON.parse(text) as Partial<UnsettledTarget>;
    if (
      typeof raw.action !== 'string' ||
      typeof raw.target !== 'string' ||
      typeof raw.params !== 'object' ||
      raw.params === null
    )
      return undefined;
    const refusal = readRefusal(raw.refusal);
    const detail = typeof raw.detail === 'string' ? { detail: raw.detail } : {};
    return {
      key,
      action: raw.action,
      target: raw.target,
      params: raw.params,
      outcome: String(raw.outcome ?? 'failed'),
      since: String(raw.since ?? ''),
      ...detail,
      ...(refusal ? { refusal } : {}),
    };
  } catch {
    // A damaged entry is dropped: the policy's own observation still finds the target if it needs action.
    return undefined;
  }
}

/** A refusal as kept; anything else (damaged, or an older entry) is none, so the target is simply tried again. */
function readRefusal(value: unknown): Refusal | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const raw = value as Record<string, unknown>;
  const { since, message, count, retry_at: retryAt, fingerprint } = raw;
  if (
    typeof since !== 'string' ||
    typeof message !== 'string' ||
    typeof count !== 'number' ||
    typeof retryAt !== 'string' ||
    typeof fingerprint !== 'string'
  )
    return undefined;
  if (Number.isNaN(Date.parse(retryAt))) return undefined;
  return { since, message, count, retry_at: retryAt, fingerprint };
}
