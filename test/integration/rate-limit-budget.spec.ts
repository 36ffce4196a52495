import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { budgetBlock, MAX_BUDGET_BLOCK, RateLimiter } from '../../src/gitlab/transport/rate-limit';
import { FakeClock } from '../support/gitlab/fake-clock';
import { MockForge, OPEN_LIMITER } from '../support/gitlab/mock-forge';

const base = OPEN_LIMITER;

/** The request budget replicas share through Redis (the forge is undici's MockAgent, the clock a fake). */
describe('rate-limit budget in Redis', () => {
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

    it('takes a large budget from Redis a block at a time, and two replicas together still stay within it', async () => {
      expect(budgetBlock(600)).toBe(1);
      expect(budgetBlock(5_000)).toBe(10);
      expect(budgetBlock(48_000)).toBe(MAX_BUDGET_BLOCK);
      const clock = new FakeClock(Date.UTC(2024, 0, 1, 12, 0, 0));
      const budget = 1_000; // blocks of 2
      const limiters = [0, 1].map(
        () => new RateLimiter({ ...base, maxRequestsPerMinute: budget, redis, redisPrefix: prefix }, clock),
      );
      // MONITOR streams every command in order: a marker read after the requests tells when the feed has them all.
      const feed = await redis.duplicate().monitor();
      const takes: string[] = [];
      const marker = `${prefix}:monitor-marker`;
      let markerSeen: () => void = () => undefined;
      const seen = new Promise<void>((resolve) => (markerSeen = resolve));
      feed.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toLowerCase().startsWith('eval') && args.some((arg) => arg.startsWith(prefix)))
          takes.push(args[0]);
        if (args[0]?.toLowerCase() === 'get' && args[1] === marker) markerSeen();
      });
      let sent = 0;
      await Promise.all(Array.from({ length: 1_001 }, (_, i) => limiters[i % 2].schedule('GET', async () => sent++)));
      await redis.get(marker);
      await seen;
      feed.disconnect();
      const keys = (await redis.keys(`${prefix}:ratelimit:*`)).sort();
      const counts = await Promise.all(keys.map(async (key) => Number(await redis.get(key))));
      expect(sent).toBe(1_001);
      // The first window held exactly the budget, taken two at a time: about half as many round trips as requests.
      expect(counts[0]).toBe(budget);
      // Taken and not sent, at most a block for each request in flight of each replica (8 each here), in the last window.
      expect(counts.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(1_001 + 2 * 8 * budgetBlock(budget));
      expect(takes.length).toBeLessThanOrEqual(Math.ceil(1_001 / budgetBlock(budget)) + 2 * 8);
      expect(takes.length).toBeGreaterThan(0);
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
});
