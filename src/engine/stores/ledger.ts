import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { ReplicaAcks } from '../../redis/replication';
import { EngineKeys } from './keys';
import { Lease } from './lease';

/**
 * States of an action's key:
 * - `claimed`: someone is acting now; its claim lease (a separate key) lives while it works.
 * - `done`, `gone`, `skipped`: settled for good; the action is never taken again.
 * - `failed`: the last attempt failed in a way that may have acted (a 5xx, a reset after sending, a timeout, a
 *   crash while acting). Nobody guesses: a pass that observed the forge after the failure decides again, and acts
 *   only if the forge still shows the action as needed.
 * - `released`: the last attempt certainly did nothing (refused before acting, never sent): free to act again.
 */
export type LedgerState = 'claimed' | 'done' | 'gone' | 'skipped' | 'failed' | 'released';

export interface LedgerEntry {
  readonly state: LedgerState;
  readonly at: string;
  readonly at_ms: number;
  /** Claims made so far; a claim must name the count it saw, so two replicas cannot both claim the same attempt. */
  readonly attempts: number;
  /** The claim's owner (its lease holds the same token); only while `claimed`. */
  readonly owner?: string;
}

/** What the executor may do about a key, as the ledger sees it now. */
export type LedgerView =
  | { readonly kind: 'free'; readonly attempts: number }
  | { readonly kind: 'settled'; readonly state: LedgerState; readonly at: string }
  | { readonly kind: 'in_progress'; readonly at: string }
  | { readonly kind: 'uncertain'; readonly attempts: number; readonly sinceMs: number; readonly at: string };

/** An action claimed by this process: the attempt it is and the lease that keeps the claim alive. */
export interface Claim {
  readonly attempts: number;
  readonly lease: Lease;
}

/**
 * How a claim went: this process holds it; someone else claimed or settled the key meanwhile; or the claim was
 * written but its replicas did not confirm it (then it is released again, and the action waits for another pass).
 */
export type ClaimResult =
  | { readonly kind: 'claimed'; readonly claim: Claim }
  | { readonly kind: 'taken' }
  | { readonly kind: 'unconfirmed'; readonly reason: string };

/** How long an action's key is remembered: far longer than any failure stays visible to a policy. */
const LEDGER_TTL_MS = 90 * 86_400_000;

/**
 * A claim lives this long without renewal: the executor renews it while the action runs, so a process that dies
 * while acting leaves a claim that turns uncertain within seconds, not a key blocked for the ledger's lifetime.
 */
export const CLAIM_LEASE_MS = 15_000;

/**
 * Claims the attempt after `ARGV[1]` claims: only when the key is free (no entry, or failed/released) and the
 * count of earlier claims is the one the caller saw. Writes the entry and its lease in one step.
 */
const CLAIM = `
local current = redis.call('GET', KEYS[1])
local attempts = 0
if current then
  local entry = cjson.decode(current)
  if entry.state ~= 'failed' and entry.state ~= 'released' and entry.state ~= 'rate_limited' then return 0 end
  attempts = tonumber(entry.attempts or 1)
end
if attempts ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
return 1
`;

/** Writes the outcome only while the caller still owns the claim: a holder that outlived its lease changes nothing. */
const SETTLE = `
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local entry = cjson.decode(current)
if entry.state ~= 'claimed' or entry.owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1
`;

/** A claim whose lease is gone (its owner died) becomes `failed`: it may have acted, so the forge is looked at. */
const EXPIRE_CLAIM = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

/**
 * The idempotency ledger: an action key is claimed atomically before the forge is called, so a second pass, a
 * second replica, a restart or a queue delivered twice finds it taken and does nothing (at most once). A claim that
 * did not end in a settled outcome (a failure, a crash while acting) is not forgotten either: the next pass that
 * observed the forge after it decides again (at least once).
 */
@Injectable()
export class Ledger {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly replicas: ReplicaAcks,
  ) {
    this.keys = EngineKeys.of(config);
  }

  /** Where a key stands; a claim whose owner died is turned into `failed` (as of `now`) on the way. */
  async inspect(policy: string, key: string, now: Date): Promise<LedgerView> {
    const ledgerKey = this.keys.ledger(policy, key);
    const text = await this.redis.get(ledgerKey);
    const entry = parseEntry(text);
    if (!text || !entry) return { kind: 'free', attempts: 0 };
    switch (entry.state) {
      case 'released':
        return { kind: 'free', attempts: entry.attempts };
      case 'failed':
        return { kind: 'uncertain', attempts: entry.attempts, sinceMs: entry.at_ms, at: entry.at };
      case 'claimed': {
        const failed = this.entry('failed', now, entry.attempts);
        const expired = await this.redis.eval(
          EXPIRE_CLAIM,
          2,
          ledgerKey,
          this.keys.claimLease(policy, key),
          text,
          JSON.stringify(failed),
          String(LEDGER_TTL_MS),
        );
        if (expired !== 1) return { kind: 'in_progress', at: entry.at };
        return { kind: 'uncertain', attempts: entry.attempts, sinceMs: now.getTime(), at: failed.at };
      }
      default:
        return { kind: 'settled', state: entry.state, at: entry.at };
    }
  }

  /**
   * Claims the next attempt of an action, given the number of attempts the caller saw (0 for a key never claimed).
   * The claim's lease is renewed until settled. Where replicas must hold a claim (`redis.min_replicas_acked`), it
   * counts only once they confirm it: a claim that a failover could still lose is no claim.
   */
  async claim(policy: string, key: string, seenAttempts: number, now: Date): Promise<ClaimResult> {
    const token = randomUUID();
    const ledgerKey = this.keys.ledger(policy, key);
    const leaseKey = this.keys.claimLease(policy, key);
    const attempts = seenAttempts + 1;
    const entry: LedgerEntry = { ...this.entry('claimed', now, attempts), owner: token };
    const claimed = await this.redis.eval(
      CLAIM,
      2,
      ledgerKey,
      leaseKey,
      String(seenAttempts),
      JSON.stringify(entry),
      String(LEDGER_TTL_MS),
      token,
      String(CLAIM_LEASE_MS),
    );
    if (claimed !== 1) return { kind: 'taken' };
    const claim = { attempts, lease: Lease.adopt(this.redis, leaseKey, token, CLAIM_LEASE_MS) };
    const unconfirmed = await this.replicas.confirm(
      ledgerKey,
      async () => parseEntry(await this.redis.get(ledgerKey))?.owner === token,
    );
    if (unconfirmed === undefined) return { kind: 'claimed', claim };
    // Nothing was sent: the key is free again for the pass that finds the replicas back.
    await this.settle(policy, key, claim, 'released', now).catch(() => claim.lease.stop());
    return { kind: 'unconfirmed', reason: unconfirmed };
  }

  /** Records how a claimed attempt ended and drops its lease; false when the claim was no longer this caller's. */
  async settle(
    policy: string,
    key: string,
    claim: Claim,
    state: Exclude<LedgerState, 'claimed'>,
    at: Date,
  ): Promise<boolean> {
    claim.lease.stop();
    const entry = this.entry(state, at, claim.attempts);
    const settled = await this.redis.eval(
      SETTLE,
      2,
      this.keys.ledger(policy, key),
      claim.lease.key,
      claim.lease.token,
      JSON.stringify(entry),
      String(LEDGER_TTL_MS),
    );
    return settled === 1;
  }

  async lookup(policy: string, key: string): Promise<LedgerEntry | undefined> {
    return parseEntry(await this.redis.get(this.keys.ledger(policy, key)));
  }

  private entry(state: LedgerState, at: Date, attempts: number): LedgerEntry {
    return { state, at: at.toISOString(), at_ms: at.getTime(), attempts };
  }
}

const STATES: readonly string[] = ['claimed', 'done', 'gone', 'skipped', 'failed', 'released'];

/**
 * Entries written before attempts were counted read as one attempt; their `rate_limited` (the forge did nothing)
 * reads as released. A damaged entry reads as `failed` just now: it may stand for an action that acted.
 */
function parseEntry(text: string | null): LedgerEntry | undefined {
  if (!text) return undefined;
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    raw = {};
  }
  const at = typeof raw.at === 'string' ? raw.at : new Date().toISOString();
  const atMs = typeof raw.at_ms === 'number' ? raw.at_ms : Date.parse(at);
  const attempts = typeof raw.attempts === 'number' && raw.attempts >= 1 ? raw.attempts : 1;
  const state =
    raw.state === 'rate_limited'
      ? 'released'
      : typeof raw.state === 'string' && STATES.includes(raw.state)
        ? (raw.state as LedgerState)
        : 'failed';
  return {
    state,
    at,
    at_ms: Number.isNaN(atMs) ? Date.now() : atMs,
    attempts,
    ...(typeof raw.owner === 'string' ? { owner: raw.owner } : {}),
  };
}
