import Redis from 'ioredis';
import { createApp } from '../../src/bootstrap';
import { parseConfig } from '../../src/config/load';
import { AuditTrail } from '../../src/engine/stores/audit';
import { type Clock, systemClock } from '../../src/clock';
import { EngineService, policyTickJob } from '../../src/engine/engine.service';
import { EngineGauges } from '../../src/engine/gauges';
import { Lease } from '../../src/engine/stores/lease';
import { MetricsService } from '../../src/metrics/metrics.service';
import { AppLogger } from '../../src/logging/logger';
import { QueueService } from '../../src/queue/queue.service';
import { fakePolicy, FakePolicyModule, failures, seen, stale, touched, unreadable } from '../support/fake-policy';
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
    unreadable.clear();
    seen.unsettled.length = 0;
    seen.commits.length = 0;
    seen.actedAt.length = 0;
    delete seen.onObserve;
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
    const started = await createApp(config(policies, dryRun), 'engine.yml', quietLogger(), {
      http: false,
      modules: [FakePolicyModule],
      clock,
    });
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
      // The instance that lost each race finds the key settled, or still claimed by the winner.
      const outcomes = results
        .flatMap((result) =>
          result.records.map((record) => (record.outcome === 'in_progress' ? 'duplicate' : record.outcome)),
        )
        .sort();
      expect(outcomes).toEqual(['done', 'done', 'done', 'duplicate', 'duplicate', 'duplicate']);
      expect(again.records.map((record) => record.outcome)).toEqual(['duplicate', 'duplicate', 'duplicate']);
      const audit = await first.get(AuditTrail).read(0);
      expect(audit.map((entry) => `${entry.target} ${entry.outcome}`).sort()).toEqual(['a done', 'b done', 'c done']);
      expect(audit[0]).toMatchObject({
        policy: 'touch',
        action: 'touch',
        dry_run: false,
        detail: expect.stringMatching(/^touched /),
      });
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  /** A clock the test moves; the engine's passes read it. */
  function movableClock(start = '2030-01-01T00:00:00.000Z') {
    let now = Date.parse(start);
    return { clock: { ...systemClock, now: () => now } satisfies Clock, advance: (ms: number) => (now += ms) };
  }

  describe('a claim left by a process that died while acting', () => {
    const policy = '  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }';
    /** A claim as a dead process leaves it: the entry, and no live lease beside it. */
    const claimedByTheDead = async (key: string, at: Date) => {
      await redis.set(
        `${prefix}:ledger:touch:${key}`,
        JSON.stringify({ state: 'claimed', at: at.toISOString(), at_ms: at.getTime(), attempts: 1, owner: 'dead' }),
      );
    };

    it('turns uncertain, and a pass that observed the forge after it acts: once, not never', async () => {
      const { clock, advance } = movableClock();
      await claimedByTheDead('a', new Date(clock.now()));
      const engineApp = await app(policy, false, clock);
      try {
        const engine = engineApp.get(EngineService);
        expect((await engine.runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['uncertain']);
        expect(touched).toEqual([]);
        // The default gitlab.timeout (30 s): the forge may still be working on a request sent just before the crash.
        advance(29_000);
        expect((await engine.runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['uncertain']);
        advance(1_000);
        expect((await engine.runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['done']);
        expect((await engine.runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['duplicate']);
        expect(touched).toEqual(['a']);
        expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:a`))!)).toMatchObject({
          state: 'done',
          attempts: 2,
        });
      } finally {
        await engineApp.close();
      }
    });

    it('a claim written before attempts were counted (no owner, no lease) is not blocked for the ledger lifetime', async () => {
      const { clock, advance } = movableClock();
      const at = new Date(clock.now() - 3_600_000);
      await redis.set(
        `${prefix}:ledger:touch:a`,
        JSON.stringify({ state: 'claimed', at: at.toISOString(), at_ms: at.getTime() }),
      );
      const engineApp = await app(policy, false, clock);
      try {
        const engine = engineApp.get(EngineService);
        expect((await engine.runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['uncertain']);
        advance(30_000);
        expect((await engine.runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual(['done']);
        expect(touched).toEqual(['a']);
      } finally {
        await engineApp.close();
      }
    });

    it('blocks while the claim is alive: its owner renews the lease', async () => {
      await redis.set(
        `${prefix}:ledger:touch:a`,
        JSON.stringify({
          state: 'claimed',
          at: new Date().toISOString(),
          at_ms: Date.now(),
          attempts: 1,
          owner: 'alive',
        }),
      );
      await redis.set(`${prefix}:lease:claim:touch:a`, 'alive', 'PX', 60_000);
      const engineApp = await app(policy);
      try {
        expect((await engineApp.get(EngineService).runPass('touch', 'act')).records.map((r) => r.outcome)).toEqual([
          'in_progress',
        ]);
        expect(touched).toEqual([]);
        expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:a`))!)).toMatchObject({
          state: 'claimed',
          owner: 'alive',
        });
      } finally {
        await engineApp.close();
      }
    });
  });

  describe('a failed action', () => {
    it('that may have acted (a 500) is looked at again after gitlab.timeout, and taken again while still needed', async () => {
      failures.set('b', 'server');
      const { clock, advance } = movableClock();
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b] }', false, clock);
      try {
        const engine = engineApp.get(EngineService);
        const first = await engine.runPass('touch', 'act');
        expect(first.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
          'a done',
          'b failed',
        ]);
        expect(first.records[1]?.detail).toBe('POST things/b → 500: 500 Internal Server Error');
        expect((await engine.runPass('touch', 'act')).records.map((record) => record.outcome)).toEqual([
          'duplicate',
          'uncertain',
        ]);
        failures.delete('b');
        advance(30_000);
        expect((await engine.runPass('touch', 'act')).records.map((record) => record.outcome)).toEqual([
          'duplicate',
          'done',
        ]);
        expect(touched).toEqual(['a', 'b', 'b']);
        expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:b`))!)).toMatchObject({
          state: 'done',
          attempts: 2,
        });
      } finally {
        await engineApp.close();
      }
    });

    it('is dropped once the policy no longer decides it (the forge shows it done): never taken twice', async () => {
      failures.set('b', 'server');
      const { clock, advance } = movableClock();
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b] }', false, clock);
      try {
        await engineApp.get(EngineService).runPass('touch', 'act');
        expect(await redis.hkeys(`${prefix}:unsettled:touch`)).toEqual(['b']);
      } finally {
        await engineApp.close();
      }
      // The failed attempt had acted after all: the next observation does not decide b any more.
      advance(60_000);
      const after = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }', false, clock);
      try {
        const pass = await after.get(EngineService).runPass('touch', 'act');
        expect(pass.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual(['a duplicate']);
        expect(seen.unsettled.at(-1)).toEqual(['b']);
        expect(await redis.exists(`${prefix}:unsettled:touch`)).toBe(0);
        expect(touched).toEqual(['a', 'b']);
      } finally {
        await after.close();
      }
    });

    it('counts a 404 as gone, not as proof: a later pass that still sees the target and decides it acts', async () => {
      failures.set('a', 'gone');
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }');
      try {
        const engine = engineApp.get(EngineService);
        expect((await engine.runPass('touch', 'act')).records.map((record) => record.outcome)).toEqual(['gone']);
        // Not left open either: the next pass decides afresh on what it reads.
        expect(await redis.hkeys(`${prefix}:unsettled:touch`)).toEqual([]);
        failures.delete('a');
        expect((await engine.runPass('touch', 'act')).records.map((record) => record.outcome)).toEqual(['done']);
        expect((await engine.runPass('touch', 'act')).records.map((record) => record.outcome)).toEqual(['duplicate']);
        expect(touched).toEqual(['a', 'a']);
      } finally {
        await engineApp.close();
      }
    });
  });

  it('keeps every unsettled target for the next observe, and drops settled ones', async () => {
    failures.set('c', 'server');
    const engineApp = await app(
      '  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c, d], max_actions_per_run: 2 }',
    );
    try {
      const engine = engineApp.get(EngineService);
      const first = await engine.runPass('touch', 'act');
      expect(first.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
        'a done',
        'b done',
        'c deferred',
        'd deferred',
      ]);
      expect((await redis.hkeys(`${prefix}:unsettled:touch`)).sort()).toEqual(['c', 'd']);
      const second = await engine.runPass('touch', 'act');
      expect(second.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
        'a duplicate',
        'b duplicate',
        'c failed',
        'd done',
      ]);
      expect(seen.unsettled).toEqual([[], ['c', 'd']]);
      const open = await redis.hgetall(`${prefix}:unsettled:touch`);
      expect(Object.keys(open)).toEqual(['c']);
      expect(JSON.parse(open.c)).toMatchObject({
        action: 'touch',
        target: 'c',
        outcome: 'failed',
        params: { target: 'c' },
      });
      expect(await engineApp.get(MetricsService).render()).toMatch(/forgewarden_unsettled_targets\{policy="touch"\} 1/);
    } finally {
      await engineApp.close();
    }
  });

  it('hands commit what became of every decision of the pass, so a policy never decides again to commit', async () => {
    failures.set('b', 'server');
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c], skip: [c] }');
    try {
      await engineApp.get(EngineService).runPass('touch', 'act');
      expect(seen.commits).toEqual([['a done', 'b failed', 'c skipped']]);
    } finally {
      await engineApp.close();
    }
  });

  it('a dry run moves no mark and drops no unsettled target: the acting run after it does everything the dry run showed', async () => {
    failures.set('b', 'server');
    const acting = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [b] }');
    try {
      await acting.get(EngineService).runPass('touch', 'act');
    } finally {
      await acting.close();
    }
    failures.delete('b');
    const commitsBefore = seen.commits.length;
    const dry = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b] }', true);
    try {
      const pass = await dry.get(EngineService).runPass('touch', 'act');
      expect(pass.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
        'a would_act',
        'b would_act',
      ]);
      expect(seen.commits.length).toBe(commitsBefore);
      expect(await redis.hkeys(`${prefix}:unsettled:touch`)).toEqual(['b']);
    } finally {
      await dry.close();
    }
  });

  describe('the pass lease', () => {
    it('is lost when another holder takes it, and then no action starts', async () => {
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b] }');
      try {
        const lease = await Lease.acquire(redis, `${prefix}:lock:pass:touch`, 300);
        expect(lease).toBeDefined();
        await redis.set(`${prefix}:lock:pass:touch`, 'someone else');
        await new Promise((resolve) => setTimeout(resolve, 250));
        expect(lease!.lost).toMatch(/another holder/);
        const pass = await engineApp.get(EngineService).runPass('touch', 'act', 'inline', undefined, lease);
        expect(pass.error).toMatch(/lost the lease/);
        expect(touched).toEqual([]);
        await lease!.release();
        expect(await redis.get(`${prefix}:lock:pass:touch`)).toBe('someone else');
      } finally {
        await engineApp.close();
      }
    });

    it('of a holder that died expires within its lifetime, and a live holder keeps it past that by renewing', async () => {
      const key = `${prefix}:lock:pass:touch`;
      const alive = await Lease.acquire(redis, key, 300);
      expect(await Lease.acquire(redis, key, 300)).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(alive!.lost).toBeUndefined();
      expect(await Lease.acquire(redis, key, 300)).toBeUndefined();
      // A holder that stops renewing, as a killed process does.
      alive!.stop();
      await new Promise((resolve) => setTimeout(resolve, 400));
      const next = await Lease.acquire(redis, key, 300);
      expect(next).toBeDefined();
      await next!.release();
      expect(await redis.exists(key)).toBe(0);
    });
  });

  it('gives each action the time it is performed, not the time the pass began', async () => {
    const { clock, advance } = movableClock();
    // A long observe (thousands of tags read): the forge's clock moves on meanwhile.
    seen.onObserve = () => advance(10 * 60_000);
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }', false, clock);
    try {
      await engineApp.get(EngineService).runPass('touch', 'act');
      expect(seen.actedAt.map((at) => at.toISOString())).toEqual(['2030-01-01T00:10:00.000Z']);
      expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:a`))!)).toMatchObject({
        state: 'done',
        at: '2030-01-01T00:10:00.000Z',
      });
    } finally {
      await engineApp.close();
    }
  });

  it('puts back the next run of a schedule whose chain a killed process broke, and adds nothing to a whole one', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1h, targets: [] }');
    try {
      const engine = engineApp.get(EngineService);
      await engine.startDaemon();
      const delayed = `${prefix}:work:delayed`;
      const [next] = await redis.zrange(delayed, 0, -1);
      expect(next).toMatch(/^repeat:/);
      await engine.startSchedules();
      expect(await redis.zrange(delayed, 0, -1)).toEqual([next]);
      // What a process killed between Bull's two steps leaves: the schedule listed, its next run never queued.
      await redis.zrem(delayed, next);
      await redis.del(`${prefix}:work:${next}`);
      expect((await engineApp.get(QueueService).schedules(policyTickJob)).map((s) => s.id)).toEqual(['touch']);
      // A schedule only another replica wants (a newer policy file, mid rolling update) is not removed by the repair.
      await engineApp
        .get(QueueService)
        .syncSchedules(policyTickJob, [{ id: 'newer', payload: { policy: 'newer' }, repeat: { every: 3_600_000 } }], {
          prune: false,
        });
      await engine.checkRedisData(true);
      expect(await redis.zrange(delayed, 0, -1)).toContain(next);
      expect((await engineApp.get(QueueService).schedules(policyTickJob)).map((s) => s.id).sort()).toEqual([
        'newer',
        'touch',
      ]);
    } finally {
      await engineApp.close();
    }
  });

  it('notices Redis lost its data, makes the schedules again and is ready again', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [] }');
    try {
      const engine = engineApp.get(EngineService);
      await engine.startDaemon();
      expect((await engineApp.get(QueueService).schedules(policyTickJob)).map((s) => s.id)).toEqual(['touch']);
      // What a restart without persistence does to this deployment's keys (the test Redis is shared, so no FLUSHDB).
      const keys = await redis.keys(`${prefix}:*`);
      await redis.del(...keys);
      expect(await engineApp.get(QueueService).schedules(policyTickJob)).toEqual([]);
      await engine.checkRedisData();
      expect(engine.readiness()).toEqual({ ready: true });
      expect((await engineApp.get(QueueService).schedules(policyTickJob)).map((s) => s.id)).toEqual(['touch']);
      expect(await redis.exists(`${prefix}:marker`)).toBe(1);
      expect(await engineApp.get(MetricsService).render()).toMatch(/forgewarden_redis_data_lost_total 1/);
      // Policies learn when the loss was noticed, for the forge-side limits no read of the forge shows.
      await engine.runPass('touch', 'act');
      expect(seen.redisDataLostAt).toBeInstanceOf(Date);
      expect(Math.abs(Date.now() - seen.redisDataLostAt!.getTime())).toBeLessThan(10_000);
    } finally {
      await engineApp.close();
    }
  });

  it('says whether the running policies are those of the file: taken at start and by a reload, not after a refused one', async () => {
    let now = Date.parse('2030-01-01T03:00:00.000Z');
    const clock: Clock = { ...systemClock, now: () => now };
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1h, targets: [] }', false, clock);
    const gauges = async () => {
      const text = await engineApp.get(MetricsService).render();
      return {
        successful: Number(/^forgewarden_config_last_reload_successful (\S+)$/m.exec(text)?.[1]),
        timestamp: Number(/^forgewarden_config_last_reload_success_timestamp_seconds (\S+)$/m.exec(text)?.[1]),
      };
    };
    try {
      const engine = engineApp.get(EngineService);
      await engine.startDaemon();
      expect(engine.configStatus()).toEqual({ ok: true });
      expect(await gauges()).toEqual({ successful: 1, timestamp: Date.parse('2030-01-01T03:00:00.000Z') / 1000 });

      now += 60_000;
      engine.reloadRejected('/etc/forgewarden/policies.yml', 1);
      expect(engine.configStatus()).toEqual({
        ok: false,
        reason: 'reload failed at 2030-01-01T03:01:00.000Z: 1 problem in /etc/forgewarden/policies.yml',
      });
      expect(await gauges()).toEqual({ successful: 0, timestamp: Date.parse('2030-01-01T03:00:00.000Z') / 1000 });

      // A valid file this build cannot run (a policy type it lacks): refused too, and the running policies stay.
      now += 60_000;
      const lacking = config('  - { name: other, type: fake_touch, interval: 1m, targets: [] }');
      await expect(
        engine.reload({ ...lacking, policies: lacking.policies.map((policy) => ({ ...policy, type: 'not_built' })) }),
      ).rejects.toThrow('policy type "not_built" is not in this build');
      expect(engine.configStatus()).toEqual({
        ok: false,
        reason:
          'reload failed at 2030-01-01T03:02:00.000Z: policy type "not_built" is not in this build; is it in the list of policies/index.ts?',
      });
      expect(engine.policyNames()).toEqual(['touch']);
      expect((await gauges()).successful).toBe(0);

      now += 60_000;
      await engine.reload(config('  - { name: touch, type: fake_touch, interval: 2h, targets: [] }'));
      expect(engine.configStatus()).toEqual({ ok: true });
      expect(await gauges()).toEqual({ successful: 1, timestamp: Date.parse('2030-01-01T03:03:00.000Z') / 1000 });
    } finally {
      await engineApp.close();
    }
  });

  it('in dry run records would-be actions and calls nothing', async () => {
    const engineApp = await app(
      '  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b], skip: [b] }',
      true,
    );
    try {
      const result = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(touched).toEqual([]);
      expect(result.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
        'a would_act',
        'b skipped',
      ]);
      expect(await engineApp.get(AuditTrail).read(0)).toEqual([
        expect.objectContaining({ target: 'a', outcome: 'would_act', dry_run: true, reason: 'touch a' }),
      ]);
      expect(await redis.keys(`${prefix}:ledger:*`)).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });

  it('keeps an audit entry with the configured token and forge tokens masked in its reason and detail', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }');
    try {
      // Reasons and details quote the forge's answers and the policy's inputs; what they quote is not the trail's to keep.
      await engineApp.get(AuditTrail).record({
        time: new Date().toISOString(),
        policy: 'touch',
        target: 'a',
        action: 'touch',
        reason: 'the forge said PRIVATE-TOKEN: hunter2-from-a-header',
        outcome: 'failed',
        dry_run: false,
        detail: 'POST things/a → 500: rejected glpat-engine-test-000000 and glpat-AnotherForgeToken99',
      });
      const stored = JSON.stringify(await redis.xrange(`${prefix}:audit`, '-', '+'));
      expect(stored).toContain('the forge said PRIVATE-TOKEN: [REDACTED]');
      for (const secret of ['hunter2-from-a-header', 'glpat-engine-test-000000', 'AnotherForgeToken99'])
        expect(stored).not.toContain(secret);
    } finally {
      await engineApp.close();
    }
  });

  it('a policy-level dry_run overrides the file', async () => {
    const engineApp = await app(
      '  - { name: touch, type: fake_touch, interval: 1m, targets: [a], dry_run: true }',
      false,
    );
    try {
      const result = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(result.dryRun).toBe(true);
      expect(touched).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });

  it('defers actions over max_actions_per_run to the next pass', async () => {
    const engineApp = await app(
      '  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c], max_actions_per_run: 2 }',
    );
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

  it('queues a delayed action under its key, so deciding it again adds nothing', async () => {
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a], delay: 1h }');
    try {
      const engine = engineApp.get(EngineService);
      expect((await engine.runPass('touch', 'act', 'queue')).records.map((record) => record.outcome)).toEqual([
        'scheduled',
      ]);
      expect((await engine.runPass('touch', 'act', 'queue')).records.map((record) => record.outcome)).toEqual([
        'scheduled',
      ]);
      expect(await redis.zrange(`${prefix}:work:delayed`, 0, -1)).toEqual(['touch:a:0']);
      expect(touched).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });

  it('counts inline delays from the decision, not one after another', async () => {
    let now = Date.parse('2030-01-01T00:00:00.000Z');
    const sleeps: number[] = [];
    const clock: Clock = {
      ...systemClock,
      now: () => now,
      sleep: async (ms) => {
        sleeps.push(ms);
        now += ms;
      },
    };
    const engineApp = await app(
      '  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c, d], delay: 1s }',
      false,
      clock,
    );
    try {
      const pass = await engineApp.get(EngineService).runPass('touch', 'act', 'inline');
      expect(pass.records.map((record) => record.outcome)).toEqual(['done', 'done', 'done', 'done']);
      // One wait for all four: the later ones are due when the first is.
      expect(sleeps).toEqual([1_000]);
    } finally {
      await engineApp.close();
    }
  });

  it('exports a measure a policy publishes, cluster-wide: a replica that did not act exports the same value', async () => {
    const now = Date.parse('2026-11-27T10:00:00Z');
    const clock: Clock = { ...systemClock, now: () => now };
    const policy = '  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }';
    const [acting, other] = [await app(policy, false, clock), await app(policy, false, clock)];
    try {
      await acting.get(EngineService).runPass('touch', 'act');
      const line = 'forgewarden_fake_last_touch_timestamp_seconds{policy="touch",target="a"} 1795773600';
      expect(await acting.get(MetricsService).render()).toContain(line);
      expect(await other.get(MetricsService).render()).not.toContain(line);
      await other.get(EngineGauges).refresh();
      expect(await other.get(MetricsService).render()).toContain(line);
    } finally {
      await Promise.all([acting.close(), other.close()]);
    }
  });

  describe('the precondition read again before acting', () => {
    it.each([
      ['without a delay', ''],
      ['after a delay', ', delay: 1s'],
    ])(
      '%s: an action whose premise the forge contradicts is not sent, is stale, and the next pass decides afresh',
      async (_name, delay) => {
        stale.add('a');
        const engineApp = await app(`  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b]${delay} }`);
        try {
          const engine = engineApp.get(EngineService);
          const pass = await engine.runPass('touch', 'act', 'inline');
          expect(
            pass.records.map((record) => `${record.decision.target} ${record.outcome} ${record.detail ?? ''}`),
          ).toEqual(['a stale a changed meanwhile', 'b done touched b']);
          expect(touched).toEqual(['b']);
          // Nothing was sent: the key is free, and the pass leaves nothing open (it decides afresh, it does not retry).
          expect(JSON.parse((await redis.get(`${prefix}:ledger:touch:a`))!)).toMatchObject({ state: 'released' });
          expect(await redis.hkeys(`${prefix}:unsettled:touch`)).toEqual([]);
          const audit = await engineApp.get(AuditTrail).read(0);
          expect(audit.find((entry) => entry.target === 'a')).toMatchObject({
            outcome: 'stale',
            detail: 'a changed meanwhile',
          });

          stale.delete('a');
          const next = await engine.runPass('touch', 'act', 'inline');
          expect(next.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
            'a done',
            'b duplicate',
          ]);
          expect(touched).toEqual(['b', 'a']);
        } finally {
          await engineApp.close();
        }
      },
    );
  });

  describe('a final refusal of the forge', () => {
    it('parks the target: not sent again before an hour, then after two, four… up to a day, and shown as refused meanwhile', async () => {
      failures.set('a', 'refused');
      let now = Date.parse('2026-11-27T10:00:00Z');
      const clock: Clock = { ...systemClock, now: () => now };
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b] }', false, clock);
      try {
        const engine = engineApp.get(EngineService);
        const metrics = engineApp.get(MetricsService);
        const first = await engine.runPass('touch', 'act', 'inline');
        expect(
          first.records.map((record) => `${record.decision.target} ${record.outcome} ${record.detail ?? ''}`),
        ).toEqual([
          'a refused POST things/a → 403: 403 Forbidden; parked until 2026-11-27T11:00:00.000Z',
          'b done touched b',
        ]);
        expect(touched).toEqual(['a', 'b']);
        expect((await metrics.registry.getSingleMetric('forgewarden_targets_refused')?.get())?.values).toEqual([
          { labels: { policy: 'touch' }, value: 1 },
        ]);
        expect((await metrics.registry.getSingleMetric('forgewarden_passes_total')?.get())?.values).toEqual([
          { labels: { policy: 'touch', result: 'partial' }, value: 1 },
        ]);

        // Within the hour: nothing is sent, and the record says since when and until when.
        now += 30 * 60_000;
        const parked = await engine.runPass('touch', 'act', 'inline');
        expect(
          parked.records.map((record) => `${record.decision.target} ${record.outcome} ${record.detail ?? ''}`),
        ).toEqual([
          'a refused refused since 2026-11-27T10:00:00.000Z: POST things/a → 403: 403 Forbidden; looked at again after 2026-11-27T11:00:00.000Z',
          'b duplicate ',
        ]);
        expect(touched).toEqual(['a', 'b']);
        // A parked target asks for no pass of its own: it waits out its time.
        expect(parked.nextPassAt).toBeUndefined();
        // plan shows it too.
        const plan = await engine.runPass('touch', 'plan');
        expect(plan.parked?.a).toMatchObject({
          since: '2026-11-27T10:00:00.000Z',
          retry_at: '2026-11-27T11:00:00.000Z',
          count: 1,
        });

        // After the hour it is tried again; refused again, it waits two hours, then four.
        now = Date.parse('2026-11-27T11:00:00Z');
        expect((await engine.runPass('touch', 'act', 'inline')).records[0]?.detail).toBe(
          'POST things/a → 403: 403 Forbidden; parked until 2026-11-27T13:00:00.000Z',
        );
        now = Date.parse('2026-11-27T13:00:00Z');
        expect((await engine.runPass('touch', 'act', 'inline')).records[0]?.detail).toBe(
          'POST things/a → 403: 403 Forbidden; parked until 2026-11-27T17:00:00.000Z',
        );
        expect(touched).toEqual(['a', 'b', 'a', 'a']);

        // Once the forge takes it, the target is settled and leaves the parked ones.
        failures.delete('a');
        now = Date.parse('2026-11-27T17:00:00Z');
        expect((await engine.runPass('touch', 'act', 'inline')).records.map((record) => record.outcome)).toEqual([
          'done',
          'duplicate',
        ]);
        expect(await redis.hkeys(`${prefix}:unsettled:touch`)).toEqual([]);
        expect((await metrics.registry.getSingleMetric('forgewarden_targets_refused')?.get())?.values).toEqual([
          { labels: { policy: 'touch' }, value: 0 },
        ]);
      } finally {
        await engineApp.close();
      }
    });

    it('waits at most a day between attempts', async () => {
      failures.set('a', 'refused');
      let now = Date.parse('2026-11-01T00:00:00Z');
      const clock: Clock = { ...systemClock, now: () => now };
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }', false, clock);
      try {
        const engine = engineApp.get(EngineService);
        const waits: number[] = [];
        for (let refusal = 0; refusal < 8; refusal++) {
          const record = (await engine.runPass('touch', 'act', 'inline')).records[0];
          const until = Date.parse(record?.refusal?.retry_at ?? '');
          waits.push((until - now) / 3_600_000);
          now = until;
        }
        expect(waits).toEqual([1, 2, 4, 8, 16, 24, 24, 24]);
      } finally {
        await engineApp.close();
      }
    });
  });

  describe("a repair of the bot's own harm", () => {
    it('runs first and outside the cap, is tried again within the pass and at every pass, never parked, and is shown until mended', async () => {
      failures.set('a', 'refused');
      let now = Date.parse('2026-11-27T10:00:00Z');
      const slept: number[] = [];
      const clock: Clock = {
        ...systemClock,
        now: () => now,
        sleep: async (ms) => {
          slept.push(ms);
          now += ms;
        },
      };
      const engineApp = await app(
        '  - { name: touch, type: fake_touch, interval: 1h, targets: [b, a], repairs: [a], max_actions_per_run: 1 }',
        false,
        clock,
      );
      try {
        const engine = engineApp.get(EngineService);
        const gauges = engineApp.get(EngineGauges);
        const metrics = engineApp.get(MetricsService);
        const harmGauge = async () => {
          await gauges.refreshHarm();
          return (await metrics.registry.getSingleMetric('forgewarden_harm_open')?.get())?.values;
        };
        const first = await engine.runPass('touch', 'act', 'inline');
        // Mended first, three times within the pass, and b still within the cap of one.
        expect(touched).toEqual(['a', 'a', 'a', 'b']);
        expect(slept).toEqual([2_000, 5_000]);
        expect(first.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
          'b done',
          'a failed',
        ]);
        expect(first.records[1]?.detail).toBe(
          "POST things/a → 403: 403 Forbidden; a repair of the bot's own harm is tried again, never parked",
        );
        expect(first.harm).toEqual([
          expect.objectContaining({ kind: 'half_touched', target: 'a', since: '2026-11-27T10:00:00.000Z' }),
        ]);
        // Not parked: no refusal kept, and the next pass comes within 45 seconds, not at the hour.
        expect(await redis.hget(`${prefix}:unsettled:touch`, 'a')).toContain('"outcome":"failed"');
        expect(await redis.hget(`${prefix}:unsettled:touch`, 'a')).not.toContain('refusal');
        expect(first.nextPassAt?.getTime()).toBeLessThanOrEqual(now + 45_000);
        expect(await harmGauge()).toEqual([{ labels: { policy: 'touch', kind: 'half_touched' }, value: 1 }]);

        // A minute later, still refused: tried again at once, whatever a parked refusal would have said.
        now += 60_000;
        const second = await engine.runPass('touch', 'act', 'inline');
        expect(touched).toEqual(['a', 'a', 'a', 'b', 'a', 'a', 'a']);
        expect(second.harm?.[0]?.since).toBe('2026-11-27T10:00:00.000Z');

        // The forge takes it again (rights given back): mended by the next pass, and nothing is open any more.
        failures.delete('a');
        now += 60_000;
        const third = await engine.runPass('touch', 'act', 'inline');
        expect(third.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
          'b duplicate',
          'a done',
        ]);
        expect(third.harm).toBeUndefined();
        expect(await redis.hget(`${prefix}:harm`, 'touch')).toBeNull();
        expect(await harmGauge()).toEqual([{ labels: { policy: 'touch', kind: 'half_touched' }, value: 0 }]);
      } finally {
        await engineApp.close();
      }
    });

    it('reads a 404 as out of sight, not as gone: the harm stays open and is tried again', async () => {
      failures.set('a', 'gone');
      let now = Date.parse('2026-11-27T10:00:00Z');
      const clock: Clock = { ...systemClock, now: () => now, sleep: async (ms) => void (now += ms) };
      const engineApp = await app(
        '  - { name: touch, type: fake_touch, interval: 1h, targets: [a], repairs: [a] }',
        false,
        clock,
      );
      try {
        const engine = engineApp.get(EngineService);
        const first = await engine.runPass('touch', 'act', 'inline');
        expect(first.records.map((record) => `${record.outcome} ${record.detail}`)).toEqual([
          'failed not visible now: POST things/a → 404: 404 Not Found; tried again at every pass',
        ]);
        expect((await redis.get(`${prefix}:ledger:touch:a`)) ?? '').not.toContain('"gone"');
        failures.delete('a');
        now += 60_000;
        expect((await engine.runPass('touch', 'act', 'inline')).records.map((record) => record.outcome)).toEqual([
          'done',
        ]);
      } finally {
        await engineApp.close();
      }
    });

    it('in dry run is shown as open, and acts on nothing', async () => {
      const engineApp = await app(
        '  - { name: touch, type: fake_touch, interval: 1h, targets: [a], repairs: [a] }',
        true,
      );
      try {
        const result = await engineApp.get(EngineService).runPass('touch', 'act', 'inline');
        expect(result.records.map((record) => record.outcome)).toEqual(['would_act']);
        expect(touched).toEqual([]);
        expect(result.harm).toEqual([
          expect.objectContaining({ kind: 'half_touched', target: 'a', last: 'would act' }),
        ]);
      } finally {
        await engineApp.close();
      }
    });
  });

  describe('a target that cannot be read', () => {
    it('is recorded against that target; the others are decided and acted on, and the pass is partial', async () => {
      unreadable.add('b');
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b, c] }');
      try {
        const engine = engineApp.get(EngineService);
        const pass = await engine.runPass('touch', 'act', 'inline');
        expect(pass.error).toBeUndefined();
        expect(pass.unobserved).toEqual([{ target: 'thing b', reason: 'GET things/b → 403: 403 Forbidden' }]);
        expect(pass.records.map((record) => `${record.decision.target} ${record.outcome}`)).toEqual([
          'a done',
          'c done',
        ]);
        expect(touched).toEqual(['a', 'c']);
        const audit = await engineApp.get(AuditTrail).read(0);
        expect(audit.find((entry) => entry.action === 'observe')).toMatchObject({
          target: 'thing b',
          outcome: 'unobserved',
          detail: 'GET things/b → 403: 403 Forbidden',
        });
        const passes = await engineApp.get(MetricsService).registry.getSingleMetric('forgewarden_passes_total')?.get();
        expect(passes?.values).toEqual([{ labels: { policy: 'touch', result: 'partial' }, value: 1 }]);
      } finally {
        await engineApp.close();
      }
    });

    it('keeps the open targets of a partial pass that it did not decide on, for the pass that reads them', async () => {
      failures.set('b', 'server');
      const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a, b] }');
      try {
        const engine = engineApp.get(EngineService);
        await engine.runPass('touch', 'act', 'inline');
        expect(await redis.hkeys(`${prefix}:unsettled:touch`)).toEqual(['b']);
        // b cannot be read next pass: it is not decided on, and stays open rather than being forgotten.
        unreadable.add('b');
        await engine.runPass('touch', 'act', 'inline');
        expect(await redis.hkeys(`${prefix}:unsettled:touch`)).toEqual(['b']);
        expect(seen.unsettled.at(-1)).toEqual(['b']);
      } finally {
        await engineApp.close();
      }
    });
  });

  it('reports a refusal for now as rate_limited, not as a failure', async () => {
    failures.set('a', 'rate_limited');
    const engineApp = await app('  - { name: touch, type: fake_touch, interval: 1m, targets: [a] }');
    try {
      const pass = await engineApp.get(EngineService).runPass('touch', 'act');
      expect(pass.records.map((record) => `${record.outcome} ${record.detail}`)).toEqual([
        'rate_limited the forge refused a for now',
      ]);
      expect(await engineApp.get(AuditTrail).read(0)).toEqual([
        expect.objectContaining({ target: 'a', outcome: 'rate_limited' }),
      ]);
    } finally {
      await engineApp.close();
    }
  });

  it('queues no extra pass that the trigger would come before: a 1h policy asking for a pass in a day gets none', async () => {
    const clock: Clock = { ...systemClock, now: () => Date.parse('2030-01-01T03:20:00.000Z') };
    const engineApp = await app(
      '  - { name: touch, type: fake_touch, interval: 1h, targets: [a], follow_up: 1d }',
      false,
      clock,
    );
    try {
      const pass = await engineApp.get(EngineService).runPass('touch', 'act', 'queue');
      expect(pass.records.map((record) => record.outcome)).toEqual(['done']);
      // The hourly pass at 04:00 comes first and asks again; a "next pass at" naming tomorrow would be false.
      expect(pass.nextPassAt).toBeUndefined();
      expect(await redis.zrange(`${prefix}:work:delayed`, 0, -1)).toEqual([]);
    } finally {
      await engineApp.close();
    }
  });

  it('queues the extra pass a policy asks for, at the time of the app clock, once', async () => {
    const clock: Clock = { ...systemClock, now: () => Date.parse('2030-01-01T03:00:00.000Z') };
    const engineApp = await app(
      '  - { name: touch, type: fake_touch, interval: 1d, targets: [a], follow_up: 1h }',
      false,
      clock,
    );
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
      [
        '  - { name: one, type: fake_touch, interval: 1m, targets: [] }',
        '  - { name: two, type: fake_touch, interval: 5m, targets: [] }',
      ].join('\n'),
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
