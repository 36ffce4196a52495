import { Inject, Injectable } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS } from '../../redis/redis.module';
import type { PolicyState } from '../policy';
import { EngineKeys } from './keys';

/** A policy's own small state in Redis (watermarks), one key each under the policy's name. */
class RedisPolicyState implements PolicyState {
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

  async delete(key: string): Promise<void> {
    await this.redis.del(this.keys.state(this.policy, key));
  }
}

/** Every policy's state, each policy under its own name. */
@Injectable()
export class PolicyStates {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  of(policy: string): PolicyState {
    return new RedisPolicyState(this.redis, this.keys, policy);
  }
}
