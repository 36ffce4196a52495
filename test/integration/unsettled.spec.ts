import Redis from 'ioredis';
import type { ActionRecord, Outcome } from '../../src/engine/policy';
import { UnsettledTargets } from '../../src/engine/stores/unsettled';
import { MetricsService } from '../../src/metrics/metrics.service';
import { testConfig } from '../support/config';

const record = (key: string, outcome: Outcome): ActionRecord => ({
  decision: { action: 'retry', target: `job ${key}`, key, reason: 'test', params: { job: key } },
  outcome,
});

describe('unsettled targets in Redis: full passes replace, webhook passes merge', () => {
  const prefix = `it-unsettled-${process.pid}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const config = testConfig({ prefix, redisUrl });
  const redis = new Redis(redisUrl);
  const targets = new UnsettledTargets(redis, config, new MetricsService(config));
  const now = new Date('2026-01-01T00:00:00Z');
  const keys = async () => (await targets.read('flaky')).map((target) => `${target.key} ${target.outcome}`);

  afterEach(async () => {
    const found = await redis.keys(`${prefix}:*`);
    if (found.length > 0) await redis.del(...found);
  });
  afterAll(() => redis.quit());

  it('a webhook pass adds what it left open and drops what it settled, leaving the rest', async () => {
    await targets.replace('flaky', [record('a', 'failed'), record('b', 'failed')], [], now);
    await targets.merge('flaky', [record('b', 'done'), record('c', 'scheduled')], now);
    expect(await keys()).toEqual(['a failed', 'c scheduled']);
  });

  it('a full pass keeps targets a webhook pass opened while it ran, and drops what it no longer decides on', async () => {
    await targets.replace('flaky', [record('a', 'failed'), record('b', 'failed')], [], now);
    const seenAtStart = await targets.read('flaky');
    // While the full pass runs, a webhook's pass opens c.
    await targets.merge('flaky', [record('c', 'failed')], now);
    // The full pass settles a and no longer decides on b.
    await targets.replace('flaky', [record('a', 'done')], seenAtStart, now);
    expect(await keys()).toEqual(['c failed']);
  });
});
