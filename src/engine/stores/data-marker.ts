import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { readJsonObject } from '../json';
import { EngineKeys } from './keys';

/**
 * The marker the daemon writes into Redis when it starts: while it is there, Redis holds the daemon's data; when it is
 * gone, Redis lost it (restarted without persistence, failed over, flushed). It also keeps when a running daemon
 * last found the data lost, which a policy whose forge-side limits Redis recorded needs to know, and when the records
 * were last dropped for describing another forge.
 */
@Injectable()
export class DataMarker {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  /** Writes the marker unless one is there (another replica's, perhaps with the time of a loss it noticed). */
  async ensure(now: Date): Promise<void> {
    await this.redis.set(this.keys.marker(), JSON.stringify({ since: now.toISOString() }), 'NX');
  }

  async present(): Promise<boolean> {
    return (await this.redis.exists(this.keys.marker())) === 1;
  }

  /** The marker again, with the time the loss was found (unless another replica wrote it first). */
  async markLost(now: Date): Promise<void> {
    const at = now.toISOString();
    await this.redis.set(this.keys.marker(), JSON.stringify({ since: at, data_lost_at: at }), 'NX');
  }

  /**
   * The marker again after the records were dropped for being another forge's (`lost`: the limits only they knew are
   * unknown now, as after a loss) or this forge's before it was reset (its limits went with it): the time, so a file
   * a policy wrote before then is known to belong to that forge.
   */
  async markForgeChanged(now: Date, lost: boolean): Promise<void> {
    const at = now.toISOString();
    await this.redis.set(
      this.keys.marker(),
      JSON.stringify({ since: at, forge_changed_at: at, ...(lost ? { data_lost_at: at } : {}) }),
      'NX',
    );
  }

  /**
   * When a running daemon last found Redis without its data, if one did; and when the records were last dropped for
   * another or a reset forge.
   */
  async times(): Promise<{ lostAt?: Date; forgeChangedAt?: Date }> {
    const marker = readJsonObject((await this.redis.get(this.keys.marker())) ?? undefined);
    const lostAt = dateOf(marker?.data_lost_at);
    const forgeChangedAt = dateOf(marker?.forge_changed_at);
    return { ...(lostAt ? { lostAt } : {}), ...(forgeChangedAt ? { forgeChangedAt } : {}) };
  }
}

function dateOf(value: unknown): Date | undefined {
  const at = typeof value === 'string' ? new Date(value) : undefined;
  return at && !Number.isNaN(at.getTime()) ? at : undefined;
}
