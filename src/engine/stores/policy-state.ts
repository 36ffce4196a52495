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

  async delete(key: string): Promise<void> {
    await this.redis.del(this.keys.state(this.policy, key));
  }
}

/**
 * A value a policy stored as JSON, or undefined when it is missing or damaged: policies then treat it as never
 * written (a first poll, no open cleanup) rather than fail the pass on a broken key.
 */
export function readJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Like readJson, for a stored object. */
export function readJsonObject(text: string | undefined): Record<string, unknown> | undefined {
  const value = readJson(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
