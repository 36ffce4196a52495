import { Inject, Injectable } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { REDIS } from '../redis/redis.module';
import { EngineKeys } from './keys';

export interface LedgerEntry {
  /** `claimed` while under way, then the outcome: done, gone, failed, skipped, rate_limited. */
  readonly state: string;
  readonly at: string;
  /** The claim's time in epoch ms, for stale claims (absent on settled entries). */
  readonly at_ms?: number;
}

/** How long an action's key is remembered: far longer than any failure stays visible to a policy. */
const LEDGER_TTL_MS = 90 * 86_400_000;

/**
 * SET NX, or take over an entry still `claimed` whose claim time (`at_ms`) is before ARGV[3]: one atomic step, so two
 * replicas cannot both take over the same stale claim.
 */
const TAKE_STALE_CLAIM = `
local current = redis.call('GET', KEYS[1])
if current then
  local entry = cjson.decode(current)
  if entry.state ~= 'claimed' or entry.at_ms == nil or tonumber(entry.at_ms) >= tonumber(ARGV[3]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

/**
 * The idempotency ledger: an action key is claimed atomically (SET NX) before the forge is called, so a second pass,
 * a second replica, a restart or a queue delivered twice finds it taken and does nothing. A claim is given back only
 * when the forge certainly did not act (it refused before doing anything); otherwise the action is never repeated.
 * At most once is the safe side for actions like retrying a job.
 */
@Injectable()
export class Ledger {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  /**
   * True when this caller now owns the action; false when someone already claimed or did it. With `staleAfterMs`
   * (policies whose steps are idempotent), a claim never settled for that long, left by a process that died between
   * claiming and acting, may be taken over.
   */
  async claim(policy: string, key: string, at: Date, staleAfterMs?: number): Promise<boolean> {
    const value = JSON.stringify({ state: 'claimed', at: at.toISOString(), at_ms: at.getTime() });
    const ledgerKey = this.keys.ledger(policy, key);
    if (staleAfterMs === undefined) {
      return (await this.redis.set(ledgerKey, value, 'PX', LEDGER_TTL_MS, 'NX')) === 'OK';
    }
    const taken = await this.redis.eval(TAKE_STALE_CLAIM, 1, ledgerKey, value, String(LEDGER_TTL_MS), String(at.getTime() - staleAfterMs));
    return taken === 1;
  }

  async settle(policy: string, key: string, outcome: string, at: Date): Promise<void> {
    const value = JSON.stringify({ state: outcome, at: at.toISOString() });
    await this.redis.set(this.keys.ledger(policy, key), value, 'PX', LEDGER_TTL_MS);
  }

  /** Gives a claim back, so a later pass may try again. */
  async release(policy: string, key: string): Promise<void> {
    await this.redis.del(this.keys.ledger(policy, key));
  }

  async lookup(policy: string, key: string): Promise<LedgerEntry | undefined> {
    const value = await this.redis.get(this.keys.ledger(policy, key));
    return value ? (JSON.parse(value) as LedgerEntry) : undefined;
  }

  /** Whether an entry blocks the action: anything settled does, and a claim unless it has gone stale. */
  blocks(entry: LedgerEntry | undefined, now: Date, staleAfterMs?: number): boolean {
    if (!entry) return false;
    if (entry.state !== 'claimed' || staleAfterMs === undefined || entry.at_ms === undefined) return true;
    return entry.at_ms >= now.getTime() - staleAfterMs;
  }
}
