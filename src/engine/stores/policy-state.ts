import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { ReplicaAcks } from '../../redis/replication';
import type { PolicyState } from '../policy';
import { EngineKeys } from './keys';

/** Keys per MGET: large enough to save the round trips, small enough not to hold Redis up for long. */
const MGET_CHUNK = 1_000;

/** A policy's own small state in Redis (watermarks), one key each under the policy's name. */
class RedisPolicyState implements PolicyState {
  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: EngineKeys,
    private readonly policy: string,
    private readonly replicas: ReplicaAcks,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.redis.get(this.keys.state(this.policy, key))) ?? undefined;
  }

  async getMany(keys: readonly string[]): Promise<Array<string | undefined>> {
    const values: Array<string | undefined> = [];
    // One MGET per thousand keys: every key of a policy carries the same prefix (and hash tag on a cluster).
    for (let at = 0; at < keys.length; at += MGET_CHUNK) {
      const chunk = keys.slice(at, at + MGET_CHUNK).map((key) => this.keys.state(this.policy, key));
      for (const value of await this.redis.mget(...chunk)) values.push(value ?? undefined);
    }
    return values;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    if (ttlMs) await this.redis.set(this.keys.state(this.policy, key), value, 'PX', ttlMs);
    else await this.redis.set(this.keys.state(this.policy, key), value);
  }

  async setGuard(key: string, value: string): Promise<void> {
    const stateKey = this.keys.state(this.policy, key);
    await this.redis.set(stateKey, value);
    await this.replicas.require(stateKey, async () => (await this.redis.get(stateKey)) === value);
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
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly replicas: ReplicaAcks,
  ) {
    this.keys = EngineKeys.of(config);
  }

  of(policy: string): PolicyState {
    return new RedisPolicyState(this.redis, this.keys, policy, this.replicas);
  }
}
