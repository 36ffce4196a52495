import Redis from 'ioredis';
import { createApp } from '../../src/bootstrap';
import { parseConfig } from '../../src/config/load';
import { AuditTrail } from '../../src/engine/audit';
import type { Clock } from '../../src/engine/clock';
import { EngineService, policyTickJob } from '../../src/engine/engine.service';
import { AppLogger } from '../../src/logging/logger';
import { QueueService } from '../../src/queue/queue.service';
import { claims, fakePolicy, FakePolicyModule, failures, stale, touched } from '../support/fake-policy';
import { MemoryStream } from '../support/memory-stream';

const quietLogger = () => new AppLogger({ level: 'error', stream: new MemoryStream() });

describe('the engine on a real Redis', () => {
  let redis: Redis;
  let prefix: string;
  let counter = 0;

  beforeEach(() => {
    prefix = `it-engine-${process.pid}-${++counter}`;
    redis = new Redis(process.env.REDIS_URL!);
    touched.length = 0;
    failures.clear();
    stale.clear();
    delete claims.staleAfterMs;
  });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  function config(policies: string, dryRun = false) {
    return parseConfig(
      [
        'version: 1',
        'gitlab: { url: "https://gitlab.example.com", token: "glpat-engine-test-000000" }',
        `redis: { url: "${process.env.REDIS_URL}", prefix: "${prefix}" }`,
        `dry_run: ${dryRun}`,
        'policies:',
        policies,
      ].join('\n'),
      'engine.yml',
      { policyTypes: [fakePolicy], env: {} },
    );
  }

  async function app(policies: string, dryRun = false, clock?: Clock) {
    const started = await createApp(config(policies, dryRun), 'engine.yml', quietLogger(), { http: false, modules: [FakePolicyModule], clock });
    return started.app;
  }

  it('acts once per key across passes and across two instances running at once', async () => {
    const policy = '  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c] }';
    const [first, second] = await Promise.all([app(policy), app(policy)]);
    try {
      const results = await Promise.all([
        first.get(EngineService).runPass('touch', 'act'),
        second.get(EngineService).runPass('touch', 'act'),
      ]);
      const again = await first.get(EngineService).runPass('touch', 'act');

      expect([...touched].sort()).toEqual(['a', 'b', 'c']);
      const outcomes = results.flatMap((result) => result.records.map((record) => record.outcome)).sort();
      expect(outcomes).toEqual(['done', 'done', 'done', 'duplicate', 'duplicate', 'duplicate']);
      expect(again.records.map((record) => record.outcome)).toEqual(['duplicate', 'duplicate', 'duplicate']);
      const audit = await first.get(AuditTrail).read(0);
      expect(audit.map((entry) => `${entry.target} ${entry.outcome}`).sort()).toEqual(['a done', 'b done', 'c done']);
      expect(audit[0]).toMatchObject({ policy: 'touch', action: 'touch', dry_run: false, detail: expect.stringMatching(/^touched /) });
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  describe('a claim left by a process that died between claiming and acting', () => {
    const claimedAgo = async (key: string, ms: number) => {
      const at = new Date(Date.now() - ms);
      await redis.set(`${prefix}:ledger:touch:${key}`, JSON.stringify({ state: 'claimed', at: at.toISOString(), at_ms: at.getTime() }));
    };
    const policy = '  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }';

    it('blocks the action for good by default: it may have acted', async () => {
      await claimedAgo('a', 3_600_000);
      const engineApp = await app(policy);
      try {
        expect((await engineApp.get(EngineService).runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['duplicate']);
        expect(touched).toEqual([]);
      } finally {
        await engineApp.close();
      }
    });

    it('is taken over once stale when the policy says its actions are idempotent', async () => {
      claims.staleAfterMs = 15 * 60_000;
      await claimedAgo('a', 3_600_000);
      const engineApp = await app(policy);
      try {
        expect((await engineApp.get(EngineService).runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['done']);
        expect(touched).toEqual(['a']);
        expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:a`))!)).toMatchObject({ state: 'done' });
      } finally {
        await engineApp.close();
      }
    });

    it('still blocks while the claim is fresh', async () => {
      claims.staleAfterMs = 15 * 60_000;
      await claimedAgo('a', 60_000);
      const engineApp = await app(policy);
      try {
        expect((await engineApp.get(EngineService).runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['duplicate']);
        expect(touched).toEqual([]);
      } finally {
        await engineApp.close();
      }
    });
  });

  it('in dry run records would-be actions and calls nothing', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b], skip: [b] }', true);
    try {
      const result = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(touched).toEqual([]);
      expect(result.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual(['a would_act', 'b skipped']);
      expect(await engineApp.get(AuditTrail).read(0)).toEqual([
        expect.objectContaining({ target: 'a', outcome: 'would_act', dry_run: true, reason: 'touch a' }),
      ]);
      expect(await redis.keys(`${prefix}:ledger:*`)).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });

  it('a policy-level dry_run overrides the file', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a], dry_run: true }', false);
    try {
      const result = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(result.dryRun).toBe(true);
      expect(touched).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });

  it('defers actions over max_actions_per_run to the next pass', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c], max_actions_per_run: 2 }');
    try {
      const first = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(first.records.map((record) => record.outcome)).toEqual(['done', 'done', 'deferred']);
      const second = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(second.records.map((record) => record.outcome)).toEqual(['duplicate', 'duplicate', 'done']);
      expect(touched).toEqual(['a', 'b', 'c']);
    } finally {
      await engineApp.close();
    }
  });

  it('counts a 404 as handled by someone else and never repeats a failed action', async () => {
    failures.set('a', 'gone');
    failures.set('b', 'server');
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b] }');
    try {
      const first = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(first.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual(['a gone', 'b failed']);
      expect(first.records[1]?.detail).toBe('500 Internal Server Error');
      const second = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(second.records.map((record) => record.outcome)).toEqual(['duplicate', 'duplicate']);
      expect(touched).toEqual(['a', 'b']);
      expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:b`))!)).toMatchObject({ state: 'failed' });
    } finally {
      await engineApp.close();
    }
  });

  it('queues a delayed action under its key, so deciding it again adds nothing', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a], delay: 1h }');
    try {
      const engine = engineApp.get(EngineService);
      expect((await engine.runPass('touch', 'act', 'queue')).records.map((record) => record.outcome)).toEqual(['scheduled']);
      expect((await engine.runPass('touch', 'act', 'queue')).records.map((record) => record.outcome)).toEqual(['scheduled']);
      expect(await redis.zrange(`${prefix}:work:delayed`, 0, -1)).toEqual(['touch:a']);
      expect(touched).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });

  it('counts inline delays from the decision, not one after another', async () => {
    let now = Date.parse('2030-01-01T00:00:00.000Z');
    const sleeps: number[] = [];
    const clock: Clock = {
      now: () => new Date(now),
      sleep: async (ms) => {
        sleeps.push(ms);
        now += ms;
      },
    };
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c, d], delay: 1s }', false, clock);
    try {
      const pass = await engineApp.get(EngineService).runPass('touch', 'act', 'inline');
      expect(pass.records.map((record) => record.outcome)).toEqual(['done', 'done', 'done', 'done']);
      // One wait for all four: the later ones are due when the first is.
      expect(sleeps).toEqual([1_000]);
    } finally {
      await engineApp.close();
    }
  });

  it('rechecks an action after its delay and skips it when it is no longer needed', async () => {
    stale.add('a');
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b], delay: 1s }');
    try {
      const pass = await engineApp.get(EngineService).runPass('touch', 'act', 'inline');
      expect(pass.records.map((record) => `${record.decision.target} ${record.outcome} ${record.detail ?? ''}`)).toEqual([
        'a skipped skip: a went stale',
        'b done touched b',
      ]);
      expect(touched).toEqual(['b']);
      expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:a`))!)).toMatchObject({ state: 'skipped' });
    } finally {
      await engineApp.close();
    }
  });

  it('reports a refusal for now as rate_limited, not as a failure', async () => {
    failures.set('a', 'rate_limited');
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }');
    try {
      const pass = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(pass.records.map((record) => `${record.outcome} ${record.detail}`)).toEqual(['rate_limited the forge refused a for now']);
      expect(await engineApp.get(AuditTrail).read(0)).toEqual([expect.objectContaining({ target: 'a', outcome: 'rate_limited' })]);
    } finally {
      await engineApp.close();
    }
  });

  it('queues the extra pass a policy asks for, at the time of the app clock, once', async () => {
    const clock = { now: () => new Date('2030-01-01T03:00:00.000Z') };
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1d, targets: [a], follow_up: 1h }', false, clock);
    try {
      const engine = engineApp.get(EngineService);
      const first = await engine.runPass('touch', 'act', 'queue');
      await engine.runPass('touch', 'act', 'queue');
      expect(first.nextPassAt?.toISOString()).toBe('2030-01-01T04:00:00.000Z');
      const due = Date.parse('2030-01-01T04:00:00.000Z');
      expect(await redis.zrange(`${prefix}:work:delayed`, 0, -1)).toEqual([`extra:touch:${due}`]);
      expect((await engineApp.get(AuditTrail).read(0))[0]?.time).toBe('2030-01-01T03:00:00.000Z');
    } finally {
      await engineApp.close();
    }
  });

  it('keeps exactly one schedule per configured policy, removing those no longer configured', async () => {
    const before = await app(
      ['  - { name: one, type: fake_touch, interval: 1m, targets: [] }', '  - { name: two, type: fake_touch, interval: 5m, targets: [] }'].join('\n'),
    );
    try {
      await before.get(EngineService).startSchedules();
      await before.get(EngineService).startSchedules();
      const schedules = await before.get(QueueService).schedules(policyTickJob);
      expect(schedules.map((s) => `${s.id} ${s.every}`).sort()).toEqual(['one 60000', 'two 300000']);
    } finally {
      await before.close();
    }
    const after = await app('  - { name: one, type: fake_touch, interval: 2m, targets: [] }');
    try {
      await after.get(EngineService).startSchedules();
      const schedules = await after.get(QueueService).schedules(policyTickJob);
      expect(schedules.map((s) => `${s.id} ${s.every}`)).toEqual(['one 120000']);
    } finally {
      await after.close();
    }
  });

  it('keeps cron schedules with their time zone, replacing one whose expression changed', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [] }');
    try {
      const queue = engineApp.get(QueueService);
      await queue.syncSchedules(policyTickJob, [
        { id: 'nightly', payload: { policy: 'nightly' }, repeat: { cron: '0 3 * * *', timezone: 'Europe/Berlin' } },
      ]);
      const [nightly] = await queue.schedules(policyTickJob);
      expect(nightly).toMatchObject({ id: 'nightly', cron: '0 3 * * *' });
      // The next run is 03:00 in Berlin, which is 01:00 or 02:00 UTC depending on daylight saving time.
      expect([1, 2]).toContain(new Date(nightly.next).getUTCHours());

      await queue.syncSchedules(policyTickJob, [
        { id: 'nightly', payload: { policy: 'nightly' }, repeat: { cron: '30 4 * * *', timezone: 'Europe/Berlin' } },
      ]);
      expect((await queue.schedules(policyTickJob)).map((s) => `${s.id} ${s.cron}`)).toEqual(['nightly 30 4 * * *']);
    } finally {
      await engineApp.close();
    }
  });

  it('plan decides without acting or writing anything', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b], skip: [b] }');
    try {
      const result = await engineApp.get(EngineService).runPass('touch', 'plan');
      expect(result.decisions.map((decision) => `${decision.action} ${decision.target} ${decision.reason}`)).toEqual([
        'touch a touch a',
        'skip b skip: b is listed in skip',
      ]);
      expect(result.records).toEqual([]);
      expect(touched).toEqual([]);
      expect(await redis.keys(`${prefix}:ledger:*`)).toEqual([]);
      expect(await engineApp.get(AuditTrail).read(0)).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });
});
