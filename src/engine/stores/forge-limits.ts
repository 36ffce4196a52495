import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import type { ForgeLimit, ForgeLimits, ForgeSlot } from '../policy';
import { EngineKeys } from './keys';

/** The window of every limit here: the forge counts its export and import limits per minute. */
export const FORGE_LIMIT_WINDOW_MS = 60_000;

/**
 * Takes one request of a limit when the last minute has room for it: a sliding window (a sorted set of the requests'
 * times), stricter than the forge's own fixed windows, so what it lets through the forge never refuses, however the
 * forge's windows fall. Answers 0 when taken, or the milliseconds until the oldest request leaves the window.
 */
const TAKE = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
`;

/** Moves a request taken to when the forge answered it (see ForgeSlot.answered). */
const ANSWERED = `
local taken = redis.call('ZSCORE', KEYS[1], ARGV[2])
if taken and tonumber(ARGV[1]) > tonumber(taken) then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 0
`;

/**
 * The forge's per-user limits of some endpoints (6 project exports a minute), counted in Redis for every replica and
 * policy that shares the token: two group backups side by side, on two replicas, together stay within one limit.
 */
@Injectable()
export class RedisForgeLimits implements ForgeLimits {
  private readonly keys: EngineKeys;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = EngineKeys.of(config);
  }

  async take(limit: ForgeLimit, now: Date): Promise<ForgeSlot> {
    const key = this.keys.forgeLimit(limit.name);
    const member = `${now.getTime()}:${randomBytes(6).toString('hex')}`;
    const waitMs = Number(
      await this.redis.eval(
        TAKE,
        1,
        key,
        String(now.getTime()),
        String(FORGE_LIMIT_WINDOW_MS),
        String(limit.perMinute),
        member,
      ),
    );
    if (waitMs > 0) return { waitMs, answered: async () => undefined };
    return {
      waitMs,
      // Only the request taken, if the window still holds it, and only later; the key lives a window from its answer.
      answered: async (at) => {
        await this.redis.eval(ANSWERED, 1, key, String(at.getTime()), member, String(FORGE_LIMIT_WINDOW_MS));
      },
    };
  }
}

/** The same window in memory, for a context built outside the engine (one process, one policy: see handContext). */
export function localForgeLimits(): ForgeLimits {
  const taken = new Map<string, { at: number }[]>();
  return {
    take: async (limit, now) => {
      const at = now.getTime();
      const recent = (taken.get(limit.name) ?? []).filter((request) => request.at > at - FORGE_LIMIT_WINDOW_MS);
      taken.set(limit.name, recent);
      if (recent.length >= limit.perMinute) {
        return {
          waitMs: Math.max(1, Math.min(...recent.map((request) => request.at)) + FORGE_LIMIT_WINDOW_MS - at),
          answered: async () => undefined,
        };
      }
      const request = { at };
      recent.push(request);
      return {
        waitMs: 0,
        answered: async (answeredAt) => void (request.at = Math.max(request.at, answeredAt.getTime())),
      };
    },
  };
}
