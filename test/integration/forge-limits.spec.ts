import Redis from 'ioredis';
import { FORGE_LIMIT_WINDOW_MS, localForgeLimits, RedisForgeLimits } from '../../src/engine/stores/forge-limits';
import type { ForgeLimits } from '../../src/engine/policy';
import { testConfig } from '../support/config';

const EXPORTS = { name: 'project_export', perMinute: 3 };
const T0 = Date.parse('2026-11-27T02:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms);

describe('the forge’s per-user limits, counted for every replica', () => {
  const prefix = `it-forge-limits-${process.pid}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = new Redis(redisUrl);
  const config = testConfig({ prefix, redisUrl });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  });
  afterAll(() => redis.quit());

  const stores: Array<[string, () => ForgeLimits]> = [
    ['in Redis', () => new RedisForgeLimits(redis, config)],
    ['in memory', () => localForgeLimits()],
  ];

  it.each(stores)(
    '%s: lets `perMinute` requests through in a minute, then says how long until the oldest leaves it',
    async (_where, make) => {
      const limits = make();
      for (const ms of [0, 1_000, 2_000]) expect((await limits.take(EXPORTS, at(ms))).waitMs).toBe(0);
      expect((await limits.take(EXPORTS, at(10_000))).waitMs).toBe(50_000);
      // A refused take is not counted: at the minute's end one request is let through, and the next waits for the second.
      expect((await limits.take(EXPORTS, at(FORGE_LIMIT_WINDOW_MS))).waitMs).toBe(0);
      expect((await limits.take(EXPORTS, at(FORGE_LIMIT_WINDOW_MS))).waitMs).toBe(1_000);
      // Another limit has its own count.
      expect((await limits.take({ name: 'project_import', perMinute: 1 }, at(FORGE_LIMIT_WINDOW_MS))).waitMs).toBe(0);
    },
  );

  it.each(stores)('%s: a request counts from when the forge answered it, never from earlier', async (_where, make) => {
    const limits = make();
    const first = await limits.take(EXPORTS, at(0));
    await limits.take(EXPORTS, at(0));
    await limits.take(EXPORTS, at(0));
    // The first request's answer came 7 s after it was taken: the forge may have counted it that late.
    await first.answered(at(7_000));
    // An answer cannot move a request back.
    await first.answered(at(3_000));
    expect((await limits.take(EXPORTS, at(FORGE_LIMIT_WINDOW_MS))).waitMs).toBe(0);
    expect((await limits.take(EXPORTS, at(FORGE_LIMIT_WINDOW_MS))).waitMs).toBe(0);
    expect((await limits.take(EXPORTS, at(FORGE_LIMIT_WINDOW_MS))).waitMs).toBe(7_000);
  });

  it('is one count for every replica: two stores on one Redis share the minute', async () => {
    const one = new RedisForgeLimits(redis, config);
    const other = new RedisForgeLimits(redis, config);
    expect((await one.take(EXPORTS, at(0))).waitMs).toBe(0);
    expect((await other.take(EXPORTS, at(100))).waitMs).toBe(0);
    expect((await one.take(EXPORTS, at(200))).waitMs).toBe(0);
    expect((await other.take(EXPORTS, at(300))).waitMs).toBe(59_700);
  });
});
