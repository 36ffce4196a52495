import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { redisKeyPrefix } from '../../redis/connection';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { scanKeys } from '../../redis/topology';

/** Keys deleted per command: bounded, so a large keyspace does not block Redis. */
const BATCH = 500;

/**
 * Every key under the configuration's `redis.prefix`: the records, schedules, queues and audit trail of one deployment,
 * and nothing of another's (whose prefix may start the same, but not with this one and a colon).
 */
@Injectable()
export class PrefixKeys {
  readonly prefix: string;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.prefix = redisKeyPrefix(config.redis);
  }

  async count(): Promise<number> {
    let found = 0;
    for await (const batch of scanKeys(this.redis, `${this.prefix}:*`, BATCH)) found += batch.length;
    return found;
  }

  /** Removes them all; answers how many went. */
  async removeAll(): Promise<number> {
    let removed = 0;
    for await (const batch of scanKeys(this.redis, `${this.prefix}:*`, BATCH)) {
      if (batch.length > 0) removed += await this.redis.unlink(...batch);
    }
    return removed;
  }
}
