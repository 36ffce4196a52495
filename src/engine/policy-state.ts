import type Redis from 'ioredis';
import type { PolicyState } from './policy';
import type { EngineKeys } from './keys';

/** A policy's own small state in Redis (watermarks), one key each under the policy's name. */
export class RedisPolicyState implements PolicyState {
  constructor(
    private readonly redis: Redis,
    private readonly keys: EngineKeys,
    private readonly policy: string,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.redis.get(this.keys.state(this.policy, key))) ?? undefined;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    if (ttlMs) await this.redis.set(this.keys.state(this.policy, key), value, 'PX', ttlMs);
    else await this.redis.set(this.keys.state(this.policy, key), value);
  }
}
