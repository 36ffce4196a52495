import { Inject, Injectable } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { REDIS } from '../redis/redis.module';
import { EngineKeys } from './keys';

/** How long an action's key is remembered: far longer than any failure stays visible to a policy. */
const LEDGER_TTL_MS = 90 * 86_400_000;

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

  /** True when this caller now owns the action; false when someone already claimed or did it. */
  async claim(policy: string, key: string, at: Date): Promise<boolean> {
    const value = JSON.stringify({ state: 'claimed', at: at.toISOString() });
    return (await this.redis.set(this.keys.ledger(policy, key), value, 'PX', LEDGER_TTL_MS, 'NX')) === 'OK';
  }

  async settle(policy: string, key: string, outcome: string, at: Date): Promise<void> {
    const value = JSON.stringify({ state: outcome, at: at.toISOString() });
    await this.redis.set(this.keys.ledger(policy, key), value, 'PX', LEDGER_TTL_MS);
  }

  /** Gives a claim back, so a later pass may try again. */
  async release(policy: string, key: string): Promise<void> {
    await this.redis.del(this.keys.ledger(policy, key));
  }

  async lookup(policy: string, key: string): Promise<{ state: string; at: string } | undefined> {
    const value = await this.redis.get(this.keys.ledger(policy, key));
    return value ? (JSON.parse(value) as { state: string; at: string }) : undefined;
  }
}
