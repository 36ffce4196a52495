import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { EngineKeys } from './keys';

/** Who paused a policy, when and why. */
export interface Pause {
  readonly reason: string;
  /** `forgewarden pause` on a host, or the console (`console`). */
  readonly by: string;
  /** ISO 8601. */
  readonly since: string;
}

/**
 * Paused policies, cluster-wide: one Redis hash every replica reads before it starts an action, so a pause holds on
 * every replica from the next action on, survives restarts and reloads, and lasts until the policy is resumed.
 */
@Injectable()
export class PolicyPauses {
  private readonly key: string;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.key = EngineKeys.of(config).pauses();
  }

  /** The policy's pause, or undefined while it runs. */
  async of(policy: string): Promise<Pause | undefined> {
    const text = await this.redis.hget(this.key, policy);
    return text === null ? undefined : readPause(text);
  }

  /** Every paused policy. */
  async all(): Promise<Map<string, Pause>> {
    const fields = await this.redis.hgetall(this.key);
    return new Map(Object.entries(fields).map(([policy, text]) => [policy, readPause(text)] as const));
  }

  /** Pauses the policy; the pause it replaces, if it was paused already. */
  async pause(policy: string, pause: Pause): Promise<Pause | undefined> {
    const before = await this.of(policy);
    await this.redis.hset(this.key, policy, JSON.stringify(pause));
    return before;
  }

  /** Resumes the policy; the pause it ended, or undefined when it was not paused. */
  async resume(policy: string): Promise<Pause | undefined> {
    const before = await this.of(policy);
    if (before) await this.redis.hdel(this.key, policy);
    return before;
  }
}

/** A damaged entry still pauses: a policy someone paused must not start acting because its record is unreadable. */
function readPause(text: string): Pause {
  try {
    const raw = JSON.parse(text) as Partial<Pause>;
    return { reason: String(raw.reason ?? ''), by: String(raw.by ?? ''), since: String(raw.since ?? '') };
  } catch {
    return { reason: '(the pause record could not be read)', by: '', since: '' };
  }
}
