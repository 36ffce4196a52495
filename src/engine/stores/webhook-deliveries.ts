import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { EngineKeys } from './keys';

/** How long a delivery is remembered: the forge sends a failed one again within hours, not days. */
const SEEN_SECONDS = 24 * 60 * 60;

/** The webhook deliveries seen in the last day (by a hash of their identity), on every replica alike. */
@Injectable()
export class WebhookDeliveries {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  /** True the first time `id` is seen (and it is remembered from now on); false for a repeat. */
  async first(id: string, now: number): Promise<boolean> {
    return (await this.redis.set(this.keys.webhookDelivery(id), String(now), 'EX', SEEN_SECONDS, 'NX')) !== null;
  }

  /** Forgets `id`, so the forge's next attempt of a delivery that could not be queued gets through. */
  async forget(id: string): Promise<void> {
    await this.redis.del(this.keys.webhookDelivery(id));
  }
}
