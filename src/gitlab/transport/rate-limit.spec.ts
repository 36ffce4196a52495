import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { FakeClock } from '../../../test/support/gitlab/fake-clock';
import { MockForge } from '../../../test/support/gitlab/mock-forge';
import { RateLimiter, type RateLimitOptions } from './rate-limit';

const base: Partial<RateLimitOptions> = {
  maxRequestsPerMinute: 0,
  concurrency: 8,
  minWriteIntervalMs: 0,
  lowRemainingRatio: 0.1,
  windowMs: 60_000,
};

describe('rate-limit layer', () => {
  let redis: Redis;
  let prefix: string;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  });

  beforeEach(() => {
    prefix = `test:gitlab-rate:${randomUUID()}`;
  });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
  });

  afterAll(async () => {
    await redis.quit();
  });

  describe('shared budget', () => {
    it('is one budget for two clients on one Redis; the one that finds it spent waits for the next window', async () => {
      const forge = new MockForge();
      forge.clock.time = Date.UTC(2024, 0, 1, 12, 0, 15); // 45 s before the next minute window
      forge.pool
        .intercept({ path: (p) => p.startsWith('/api/v4/namespaces/'), method: 'GET' })
        .reply(200, { id: 1 })
        .persist();
      const shared = { maxRequestsPerMinute: 5, redis, redisPrefix: prefix };
      const a = forge.client(shared);
      const b = forge.client(shared);
      try {
        for (const id of [1, 2, 3]) await a.namespaces.show(id);
        for (const id of [4, 5]) await b.namespaces.show(id);
        expect(forge.clock.sleeps).toEqual([]);
        expect(await redis.get(`${prefix}:ratelimit:${Math.floor(forge.clock.now() / 60_000)}`)).toBe('5');

        // The sixth request of the minute, from either client, waits for the next window.
        await a.namespaces.show(6);
        expect(forge.clock.sleeps).toEqual([45_000]);
        expect(forge.calls()).toHaveLength(6);
        expect(await redis.get(`${prefix}:ratelimit:${Math.floor(forge.clock.now() / 60_000)}`)).toBe('1');
      } finally {
        await a.close();
        await b.close();
        await forge.close();
      }
    });

    it('lets no more than the budget through in a window when both clients race', async () => {
      const clock = new FakeClock(Date.UTC(2024, 0, 1, 12, 0, 0));
      const limiters = [0, 1].map(
        () => new RateLimiter({ ...base, maxRequestsPerMinute: 10, redis, redisPrefix: prefix }, clock),
      );
      const startedAt: number[] = [];
      await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          limiters[i % 2].schedule('GET', async () => {
            startedAt.push(clock.now());
          }),
        ),
      );
      // What Redis granted per window is the budget's own record: the fake clock may move on while a woken request
      // still talks to Redis, so the time a request was sent says less than the window it was counted in.
      const keys = (await redis.keys(`${prefix}:ratelimit:*`)).sort();
      const counts = await Promise.all(keys.map(async (key) => Number(await redis.get(key))));
      expect(startedAt).toHaveLength(25);
      expect(counts.reduce((sum, n) => sum + n, 0)).toBe(25);
      expect(counts[0]).toBe(10);
      expect(Math.max(...counts)).toBe(10);
    });

    it('counts per process when Redis is unreachable instead of stopping', async () => {
      const dead = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
      dead.on('error', () => undefined);
      const clock = new FakeClock();
      const limiter = new RateLimiter({ ...base, maxRequestsPerMinute: 2, redis: dead, redisPrefix: prefix }, clock);
      let sent = 0;
      for (let i = 0; i < 3; i++) await limiter.schedule('GET', async () => sent++);
      expect(sent).toBe(3);
      expect(clock.sleeps).toEqual([60_000]);
      dead.disconnect();
    });
  });

  it('caps the requests in flight per process', async () => {
    const limiter = new RateLimiter({ ...base, concurrency: 2 }, new FakeClock());
    let inFlight = 0;
    let peak = 0;
    const gates: Array<() => void> = [];
    const done = Promise.all(
      Array.from({ length: 5 }, () =>
        limiter.schedule('GET', async () => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          await new Promise<void>((resolve) => gates.push(resolve));
          inFlight--;
        }),
      ),
    );
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(inFlight).toBe(2);
    while (gates.length) {
      gates.shift()?.();
      await settle();
      expect(inFlight).toBeLessThanOrEqual(2);
    }
    await done;
    expect(peak).toBe(2);
    expect(limiter.activeRequests).toBe(0);
  });

  it('spaces writes but not reads', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ ...base, minWriteIntervalMs: 1000 }, clock);
    const sent: Array<[string, number]> = [];
    const t0 = clock.now();
    await Promise.all([
      limiter.schedule('POST', async () => sent.push(['POST', clock.now() - t0])),
      limiter.schedule('DELETE', async () => sent.push(['DELETE', clock.now() - t0])),
      limiter.schedule('GET', async () => sent.push(['GET', clock.now() - t0])),
      limiter.schedule('PUT', async () => sent.push(['PUT', clock.now() - t0])),
    ]);
    expect(sent).toEqual([
      ['POST', 0],
      ['GET', 0],
      ['DELETE', 1000],
      ['PUT', 2000],
    ]);
  });

  describe('slowing down on the forge’s own counters', () => {
    it('spreads requests over the time to reset when RateLimit-Remaining runs low', async () => {
      const forge = new MockForge();
      const resetAt = Math.floor(forge.clock.now() / 1000) + 10;
      forge.pool
        .intercept({ path: '/api/v4/namespaces/1', method: 'GET' })
        .reply(200, { id: 1 }, {
          headers: { 'ratelimit-limit': '100', 'ratelimit-remaining': '5', 'ratelimit-reset': String(resetAt) },
        })
        .times(2);
      const client = forge.client();
      try {
        await client.namespaces.show(1);
        expect(forge.clock.sleeps).toEqual([]);
        await client.namespaces.show(1);
        expect(forge.clock.sleeps).toEqual([2000]); // 10 s left for 5 requests
      } finally {
        await client.close();
        await forge.close();
      }
    });

    it('does not slow down while plenty remains, and waits for the reset when nothing does', async () => {
      const clock = new FakeClock();
      const limiter = new RateLimiter(base, clock);
      const reset = String(Math.floor(clock.now() / 1000) + 30);
      limiter.observe(200, { 'ratelimit-limit': '100', 'ratelimit-remaining': '50', 'ratelimit-reset': reset });
      expect(limiter.slowDownMs()).toBe(0);
      limiter.observe(200, { 'ratelimit-limit': '100', 'ratelimit-remaining': '0', 'ratelimit-reset': reset });
      expect(limiter.slowDownMs()).toBe(30_000);
    });

    it('pauses every request after a 429 that said how long', async () => {
      const clock = new FakeClock();
      const limiter = new RateLimiter(base, clock);
      limiter.observe(429, { 'retry-after': '5' });
      await limiter.schedule('GET', async () => undefined);
      await limiter.schedule('GET', async () => undefined);
      expect(clock.sleeps).toEqual([5000]);
    });
  });
});
