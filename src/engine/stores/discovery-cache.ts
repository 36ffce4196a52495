import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import type { DiscoveryCache } from '../discovery';
import { EngineKeys } from './keys';
import { Lease } from './lease';

/** What discovery found, in Redis: shared by every policy and replica, one replica listing a group at a time. */
@Injectable()
export class RedisDiscoveryCache implements DiscoveryCache {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.redis.get(this.keys.discovery(key))) ?? undefined;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.keys.discovery(key), value, 'PX', ttlMs);
  }

  async claim(key: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    const lease = await Lease.acquire(this.redis, this.keys.discoveryClaim(key), ttlMs);
    return lease ? () => lease.release() : undefined;
  }
}
