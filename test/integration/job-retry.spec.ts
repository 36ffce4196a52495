import type { INestApplicationContext } from '@nestjs/common';
import { AuditTrail } from '../../src/engine/stores/audit';
import { EngineService } from '../../src/engine/engine.service';
import { QueueService } from '../../src/queue/queue.service';
import { POLICY_TYPES } from '../../src/policies';
import type { RunningSandbox, World } from '../../src/sandbox';
import {
  ADMIN_TOKEN,
  baseWorld,
  type JobInput,
  type PipelineInput,
  type ProjectInput,
} from '../support/world-builders';
import { waitUntil } from '../support/cli';
import { useEngineHarness } from '../support/engine-harness';

const RESET = 'Error: read ECONNRESET: connection reset by peer\n';

/**
 * Ten failed jobs per project, one of each kind the policy must tell apart, so the expected retries are exactly the
 * three `flaky-*` jobs of each project.
 */
function failedPipelines(projectIndex: number): PipelineInput[] {
  const base = projectIndex * 1000;
  const id = (n: number) => base + n;
  const at = (minutesAgo: number) => `now-${minutesAgo}m`;
  const failed = (n: number, fields: Partial<JobInput> & { name: string }): JobInput => ({
    id: id(n),
    stage: 'test',
    status: 'failed',
    finished_at: at(20),
    log: RESET,
    ...fields,
  });
  return [
    {
      id: base + 1,
      ref: 'main',
      jobs: [
        failed(1, { name: 'flaky-a' }),
        failed(2, { name: 'flaky-b' }),
        failed(3, { name: 'flaky-c' }),
        failed(4, { name: 'unit', log: 'expected 200, received 500\n' }),
        failed(5, { name: 'audit', allow_failure: true }),
        failed(6, { name: 'erased', log: null }),
        failed(7, { name: 'deploy', stage: 'deploy' }),
      ],
    },
    {
      // Retried twice already (by people or an earlier run): the newest attempt has no retries left.
      id: base + 2,
      ref: 'main',
      jobs: [
        failed(8, { name: 'e2e', retried: true, finished_at: at(40) }),
        failed(9, { name: 'e2e', retried: true, finished_at: at(30) }),
        failed(10, { name: 'e2e', finished_at: at(25) }),
      ],
    },
  ];
}

function world(): World {
  const projects: ProjectInput[] = [1, 2, 3].map((index) => ({
    id: index,
    path: `svc-${index}`,
    namespace: 'acme',
    pipelines: failedPipelines(index),
  }));
  // No fixed `now`: the engine reads the real clock, so the sandbox must too.
  return { ...baseWorld({ projects }), now: undefined };
}

const EXPECTED_RETRIES = [1, 2, 3]
  .flatMap((p) => [1, 2, 3].map((n) => `/api/v4/projects/${p}/jobs/${p * 1000 + n}/retry`))
  .sort();

describe('job_retry against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'job-retry', world, policyTypes: POLICY_TYPES });
  let sandbox: RunningSandbox;

  beforeEach(() => {
    sandbox = harness.sandbox;
  });

  function app(dryRun = false, extra: string[] = [], timeout = '30s'): Promise<INestApplicationContext> {
    return harness.app({
      dryRun,
      gitlab: `max_requests_per_minute: 10000, timeout: ${timeout}`,
      policies: [
        '  - name: flaky',
        '    type: job_retry',
        '    projects: [acme/svc-1, acme/svc-2, 3]',
        '    interval: 1m',
        '    match: { stages: [test], failure_log: ["(?i)connection reset"] }',
        '    max_retries: 2',
        ...extra,
      ],
    });
  }

  const retriesSeen = () =>
    sandbox.state.requestLog
      .filter((entry) => entry.method === 'POST' && entry.path.endsWith('/retry'))
      .map((entry) => entry.path);

  it('retries exactly the matching jobs, each once, and nothing on the next pass', async () => {
    const engineApp = await app();
    try {
      const engine = engineApp.get(EngineService);
      const first = await engine.runPass('flaky', 'act');
      expect(first.error).toBeUndefined();
      expect(retriesSeen().sort()).toEqual(EXPECTED_RETRIES);
      expect(first.records.filter((record) => record.outcome === 'done')).toHaveLength(9);

      const reasons = new Map(first.decisions.map((decision) => [decision.target, decision.reason]));
      expect(reasons.get('acme/svc-1 job 1001 (flaky-a)')).toBe('retry 1 of 2: log matched "(?i)connection reset"');
      expect(reasons.get('acme/svc-1 job 1004 (unit)')).toBe('skip: log did not match');
      expect(reasons.get('acme/svc-1 job 1005 (audit)')).toBe('skip: allowed to fail');
      expect(reasons.get('acme/svc-1 job 1006 (erased)')).toBe('skip: log is gone (erased or expired)');
      expect(reasons.get('acme/svc-1 job 1007 (deploy)')).toBe('skip: stage deploy not matched');
      expect(reasons.get('acme/svc-1 job 1008 (e2e)')).toBe('skip: newer attempt 1010 exists');
      expect(reasons.get('acme/svc-1 job 1010 (e2e)')).toBe('skip: already retried 2 times');
      expect(first.decisions).toHaveLength(30);

      const second = await engine.runPass('flaky', 'act');
      expect(second.error).toBeUndefined();
      expect(retriesSeen()).toHaveLength(9);
      // The new attempts are pending, not failed: on the forge, each old job now has a newer attempt.
      for (const path of EXPECTED_RETRIES) {
        const jobId = Number(/jobs\/(\d+)\/retry/.exec(path)![1]);
        expect(sandbox.state.jobs.get(jobId)?.retried).toBe(true);
      }
    } finally {
      await harness.close(engineApp);
    }
  });

  it('costs one request per project when nothing is new', async () => {
    const engineApp = await app();
    try {
      const engine = engineApp.get(EngineService);
      await engine.runPass('flaky', 'act');
      sandbox.state.requestLog.length = 0;
      await engine.runPass('flaky', 'act');
      expect(sandbox.state.requestLog.map((entry) => `${entry.method} ${entry.path}`)).toEqual([
        'GET /api/v4/projects/acme%2Fsvc-1/jobs',
        'GET /api/v4/projects/acme%2Fsvc-2/jobs',
        'GET /api/v4/projects/3/jobs',
      ]);
    } finally {
      await harness.close(engineApp);
    }
  });

  it('retries each job once when two instances on one Redis run at the same time', async () => {
    const [first, second] = await Promise.all([app(), app()]);
    try {
      await Promise.all([
        first.get(EngineService).runPass('flaky', 'act'),
        second.get(EngineService).runPass('flaky', 'act'),
      ]);
      expect(retriesSeen().sort()).toEqual(EXPECTED_RETRIES);
    } finally {
      await Promise.all([harness.close(first), harness.close(second)]);
    }
  });

  it('retries nothing in dry run, and the acting pass after it retries everything the dry run showed', async () => {
    const dry = await app(true);
    let planned: string[];
    try {
      const engine = dry.get(EngineService);
      planned = (await engine.runPass('flaky', 'plan')).decisions.map((d) => `${d.action} ${d.target} ${d.reason}`);
      const dryPass = await engine.runPass('flaky', 'act');
      expect(retriesSeen()).toEqual([]);
      expect(dryPass.records.filter((record) => record.outcome === 'would_act')).toHaveLength(9);
      expect(dryPass.decisions.map((d) => `${d.action} ${d.target} ${d.reason}`)).toEqual(planned);
    } finally {
      await harness.close(dry);
    }
    // The same Redis: the dry run moved no watermark, so the acting pass decides what the dry run showed, and acts.
    const acting = await app(false);
    try {
      const pass = await acting.get(EngineService).runPass('flaky', 'act');
      expect(pass.decisions.map((d) => `${d.action} ${d.target} ${d.reason}`)).toEqual(planned);
      expect(retriesSeen().sort()).toEqual(EXPECTED_RETRIES);
    } finally {
      await harness.close(acting);
    }
  });

  it('does not make a delayed retry when someone retried the job while it waited', async () => {
    const engineApp = await app(false, ['    delay: 1s']);
    try {
      engineApp.get(QueueService).startWorking();
      const pass = await engineApp.get(EngineService).runPass('flaky', 'act', 'queue');
      expect(pass.records.filter((record) => record.outcome === 'scheduled')).toHaveLength(9);

      // A person retries job 1001 before the delay ends.
      const byPerson = await fetch(`${sandbox.url}/api/v4/projects/1/jobs/1001/retry`, {
        method: 'POST',
        headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
      });
      expect(byPerson.status).toBe(200);
      const newAttempt = ((await byPerson.json()) as { id: number }).id;

      const settled = async () => {
        const keys = await harness.redis.keys(`${harness.prefix}:ledger:flaky:*`);
        const states = await Promise.all(
          keys.map(async (key) => (JSON.parse((await harness.redis.get(key)) ?? '{}') as { state?: string }).state),
        );
        return keys.length === 9 && states.every((state) => state !== 'claimed');
      };
      await waitUntil('every queued retry has run', settled, 20_000);

      expect(retriesSeen().filter((path) => path === '/api/v4/projects/1/jobs/1001/retry')).toHaveLength(1);
      expect(retriesSeen()).toHaveLength(9); // eight by the policy, one by the person
      // Nothing was sent, so the key stays free; the next pass sees the newer attempt and decides to skip.
      expect(JSON.parse((await harness.redis.get(`${harness.prefix}:ledger:flaky:1:1001`))!)).toMatchObject({
        state: 'released',
      });
      const audit = await engineApp.get(AuditTrail).read(0);
      expect(audit).toContainEqual(
        expect.objectContaining({
          target: 'acme/svc-1 job 1001 (flaky-a)',
          outcome: 'stale',
          detail: `newer attempt ${newAttempt} exists (found when read again before retrying)`,
        }),
      );
    } finally {
      await harness.close(engineApp);
    }
  });

  describe('a retry that fails is not dropped', () => {
    async function fault(rule: Record<string, unknown>): Promise<void> {
      const response = await fetch(`${sandbox.url}/__sandbox/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(rule),
      });
      expect(response.status).toBe(201);
    }
    const jobRetried = (jobId: number) => sandbox.state.jobs.get(jobId)?.retried === true;
    const retriesActedOn = () => [...sandbox.state.jobs.values()].filter((job) => job.retried).length;

    it('after a 503 or a reset the forge answered instead of acting, a later pass retries it, once', async () => {
      await fault({ method: 'POST', path: '/jobs/1001/retry$', sequence: [503] });
      await fault({ method: 'POST', path: '/jobs/2002/retry$', sequence: ['reset'] });
      const engineApp = await app(false, ['    lookback: 2h']);
      try {
        const engine = engineApp.get(EngineService);
        const first = await engine.runPass('flaky', 'act');
        expect(
          first.records
            .filter((record) => record.outcome === 'failed')
            .map((record) => record.decision.key)
            .sort(),
        ).toEqual(['1:1001', '2:2002']);
        expect(jobRetried(1001)).toBe(false);
        expect((await harness.redis.hkeys(`${harness.prefix}:unsettled:flaky`)).sort()).toEqual(['1:1001', '2:2002']);

        // The watermark moved past both; within gitlab.timeout of the failures nobody can tell yet whether the
        // forge acted, so nothing is sent.
        const second = await engine.runPass('flaky', 'act');
        expect(
          second.records
            .filter((record) => record.outcome === 'uncertain')
            .map((record) => record.decision.key)
            .sort(),
        ).toEqual(['1:1001', '2:2002']);
      } finally {
        await harness.close(engineApp);
      }
      // A restarted daemon with a short gitlab.timeout looks again, sees no newer attempt, and retries each once.
      const restarted = await app(false, ['    lookback: 2h'], '1s');
      try {
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        const third = await restarted.get(EngineService).runPass('flaky', 'act');
        expect(
          third.records
            .filter((record) => record.outcome === 'done')
            .map((record) => record.decision.key)
            .sort(),
        ).toEqual(['1:1001', '2:2002']);
        expect(jobRetried(1001) && jobRetried(2002)).toBe(true);
        expect(retriesActedOn() - 6).toBe(9); // 6 e2e attempts were retried in the world already
        const fourth = await restarted.get(EngineService).runPass('flaky', 'act');
        expect(fourth.records.filter((record) => record.outcome !== 'skipped')).toEqual([]);
        expect(await harness.redis.exists(`${harness.prefix}:unsettled:flaky`)).toBe(0);
      } finally {
        await harness.close(restarted);
      }
    });

    it('retries deferred by max_actions_per_run are all made over the next passes, though the watermark moved', async () => {
      const engineApp = await app(false, ['    max_actions_per_run: 4']);
      try {
        const engine = engineApp.get(EngineService);
        for (let pass = 0; pass < 3; pass++) expect((await engine.runPass('flaky', 'act')).error).toBeUndefined();
        expect(retriesSeen().sort()).toEqual(EXPECTED_RETRIES);
        expect((await engine.runPass('flaky', 'act')).records.filter((record) => record.outcome !== 'skipped')).toEqual(
          [],
        );
      } finally {
        await harness.close(engineApp);
      }
    });
  });
});
