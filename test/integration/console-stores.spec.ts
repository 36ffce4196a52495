import Redis from 'ioredis';
import { type PassEntry, PassLog, PASSES_KEPT } from '../../src/engine/stores/pass-log';
import { ReplicaPresence, THIS_REPLICA } from '../../src/engine/stores/replicas';
import { testConfig } from '../support/config';

const pass = (n: number): PassEntry => ({
  started: new Date(Date.UTC(2026, 10, 27, 0, n)).toISOString(),
  took_ms: n,
  occasion: 'schedule',
  result: n % 2 === 0 ? 'ok' : 'partial',
  dry_run: false,
  outcomes: { done: n },
  replica: 'host:1',
});

describe('what the console reads besides the audit trail: pass logs and the replicas seen', () => {
  const prefix = `it-console-stores-${process.pid}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = new Redis(redisUrl);
  const config = testConfig({ prefix, redisUrl });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  });
  afterAll(() => redis.quit());

  it('keeps the last 20 passes of a policy, newest first, and the latest of many policies in one read', async () => {
    const log = new PassLog(redis, config);
    for (let n = 1; n <= 25; n++) await log.record('retry', pass(n));
    await log.record('cleanup', pass(7));
    const recent = await log.recent('retry');
    expect(recent.map((entry) => entry.took_ms)).toEqual(Array.from({ length: PASSES_KEPT }, (_, i) => 25 - i));
    expect(await redis.llen(`${prefix}:passes:log:retry`)).toBe(PASSES_KEPT);
    const latest = await log.latest(['retry', 'cleanup', 'never-ran']);
    expect([...latest].map(([policy, entry]) => [policy, entry.took_ms])).toEqual([
      ['retry', 25],
      ['cleanup', 7],
    ]);
    // A damaged entry is left out rather than failing the page.
    await redis.lpush(`${prefix}:passes:log:cleanup`, 'not json');
    expect((await log.recent('cleanup')).map((entry) => entry.took_ms)).toEqual([7]);
    expect((await log.latest(['cleanup'])).size).toBe(0);
  });

  it('counts the replicas seen since a moment, and forgets one not seen for a day', async () => {
    const presence = new ReplicaPresence(redis, config);
    const now = Date.parse('2026-11-27T12:00:00Z');
    await presence.beat(now - 30_000);
    await redis.hset(
      `${prefix}:replicas`,
      'other:2',
      JSON.stringify({ version: '0.1.0', started: '', seenMs: now - 5 * 60_000 }),
    );
    await redis.hset(
      `${prefix}:replicas`,
      'gone:3',
      JSON.stringify({ version: '0.1.0', started: '', seenMs: now - 2 * 86_400_000 }),
    );
    await redis.hset(`${prefix}:replicas`, 'damaged:4', 'not json');
    const seen = await presence.seenSince(now - 60_000, now);
    expect(seen.map((replica) => replica.name)).toEqual([THIS_REPLICA]);
    expect((await presence.seenSince(now - 10 * 60_000, now)).map((replica) => replica.name).sort()).toEqual(
      ['other:2', THIS_REPLICA].sort(),
    );
    expect((await redis.hkeys(`${prefix}:replicas`)).sort()).toEqual(['other:2', THIS_REPLICA].sort());
  });
});
