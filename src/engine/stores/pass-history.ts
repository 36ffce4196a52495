import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { EngineKeys } from './keys';
import { Lease } from './lease';

/**
 * What the engine keeps of each policy's passes, cluster-wide: when the last successful one ended, which acting
 * passes began and have not ended (a process killed in one), how many scheduled passes failed in a row, and the
 * lock that keeps two passes of one policy from overlapping.
 */
@Injectable()
export class PassHistory {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  /** When each policy's last successful pass ended, epoch seconds, by policy. */
  async lastSuccessful(): Promise<Map<string, number>> {
    const fields = await this.redis.hgetall(this.keys.lastSuccessfulPasses());
    return new Map(
      Object.entries(fields).flatMap(([policy, value]) =>
        Number.isFinite(Number(value)) ? [[policy, Number(value)] as const] : [],
      ),
    );
  }

  /** A pass went through: its end is the policy's last success, and the count of failures in a row starts again. */
  async recordSuccess(policy: string, seconds: number): Promise<void> {
    await this.redis.hset(this.keys.lastSuccessfulPasses(), policy, String(seconds));
    await this.redis.hdel(this.keys.passFailures(), policy);
  }

  /** Another scheduled pass failed: the failures in a row, this one included. */
  async countFailure(policy: string): Promise<number> {
    return this.redis.hincrby(this.keys.passFailures(), policy, 1);
  }

  /** An acting scheduled pass begins: marked, so that one killed with its process is run again at the next start. */
  async markRunning(policy: string, since: Date): Promise<void> {
    await this.redis.hset(this.keys.passesRunning(), policy, since.toISOString());
  }

  async clearRunning(policy: string): Promise<void> {
    await this.redis.hdel(this.keys.passesRunning(), policy);
  }

  /** Passes that began and never ended, by policy (when they began). */
  async interrupted(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hgetall(this.keys.passesRunning())));
  }

  /** The policy's pass lock for `ttlMs` (renewed while held), or undefined while a pass holds it anywhere. */
  lock(policy: string, ttlMs: number): Promise<Lease | undefined> {
    return Lease.acquire(this.redis, this.keys.passLock(policy), ttlMs);
  }

  /** The right to explain the policy now (the console), or undefined while an explain of it runs anywhere. */
  explainLock(policy: string, ttlMs: number): Promise<Lease | undefined> {
    return Lease.acquire(this.redis, this.keys.explainLock(policy), ttlMs);
  }
}
