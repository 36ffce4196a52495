import { AuditTrail } from '../../src/engine/stores/audit';
import { EngineService } from '../../src/engine/engine.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { asPerson, control, whileHeld } from '../support/person';
import { baseWorld, type ProjectInput } from '../support/world-builders';

/**
 * job_retry on a forge people use too: a person retries a job while the bot is about to, a project is archived or
 * closed to the bot's token. The bot acts only while the forge still shows the failure it decided on, parks what the
 * forge refuses for good, and one project's trouble is that project's.
 */

const RESET = 'Error: read ECONNRESET: connection reset by peer\n';

/** acme/svc-1 … svc-3, each with one failed job (id project*100+1) whose log matches. */
function world(): World {
  const projects: ProjectInput[] = [1, 2, 3].map((index) => ({
    id: index,
    path: `svc-${index}`,
    namespace: 'acme',
    pipelines: [
      {
        id: index * 10,
        ref: 'main',
        jobs: [
          { id: index * 100 + 1, name: 'flaky', stage: 'test', status: 'failed', finished_at: 'now-5m', log: RESET },
        ],
      },
    ],
  }));
  return { ...baseWorld({ projects }), now: undefined };
}

describe('job_retry while people work on the forge', () => {
  const harness = useEngineHarness({ name: 'job-retry-forge-changes', world, policyTypes: POLICY_TYPES });

  const app = () =>
    harness.app({
      gitlab: 'max_requests_per_minute: 10000, timeout: 30s',
      policies: [
        '  - name: flaky',
        '    type: job_retry',
        '    projects: [acme/svc-1, acme/svc-2, acme/svc-3]',
        '    interval: 1m',
        '    match: { failure_log: ["(?i)connection reset"] }',
        '    max_retries: 2',
      ],
    });
  const retries = (jobId: number) =>
    harness.sandbox.state.requestLog.filter(
      (entry) => entry.method === 'POST' && entry.path.endsWith(`/jobs/${jobId}/retry`),
    );
  const attemptsOf = (pipelineId: number) =>
    [...harness.sandbox.state.jobs.values()].filter((job) => job.pipeline_id === pipelineId).length;

  it('does not retry a job a person retried between the pass reading it and acting (no delay): the retry is stale', async () => {
    const engine = (await app()).get(EngineService);
    // The person retries job 101 while the bot reads its log, the last read before it acts.
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'GET', path: '/jobs/101/trace$' },
      () => engine.runPass('flaky', 'act'),
      async () => {
        expect((await asPerson(harness.sandbox, 'POST', '/projects/1/jobs/101/retry')).status).toBe(200);
      },
    );
    const record = pass.records.find((r) => r.decision.key === '1:101');
    expect(record).toMatchObject({
      outcome: 'stale',
      detail: expect.stringMatching(/^newer attempt \d+ exists \(found when read again before retrying\)$/),
    });
    // One retry on the forge: the person's. Two attempts in the pipeline, not three.
    expect(retries(101)).toHaveLength(1);
    expect(attemptsOf(10)).toBe(2);
    // The other projects' jobs were retried.
    expect(pass.records.filter((r) => r.outcome === 'done').map((r) => r.decision.key)).toEqual(['2:201', '3:301']);
    // The next pass does not take it up again (the person's attempt is the newest): nothing more is sent.
    const next = await engine.runPass('flaky', 'act');
    expect(next.records.filter((r) => r.outcome !== 'skipped')).toEqual([]);
    expect(retries(101)).toHaveLength(1);
  });

  it('names in every request the policy, the phase and the action it is for, so a forge log tells a precondition from an observation', async () => {
    const engine = (await app()).get(EngineService);
    await engine.runPass('flaky', 'act');
    // acme/svc-1 by path while observing, by id once the decision names it.
    const project = /^\/api\/v4\/projects\/(1|acme%2Fsvc-1)\//;
    const log = harness.sandbox.state.requestLog.filter((entry) => project.test(entry.path));
    const tagged = log.map(
      (entry) => `${entry.method} /${entry.path.replace(project, '')} ${entry.headers['x-forgewarden-phase']}`,
    );
    expect(tagged).toEqual([
      'GET /jobs observe',
      'GET /pipelines/10/jobs observe',
      'GET /jobs/101/trace observe',
      'GET /pipelines/10/jobs precondition',
      'POST /jobs/101/retry action',
    ]);
    expect(new Set(log.map((entry) => entry.headers['x-forgewarden-policy']))).toEqual(new Set(['flaky']));
    const [precondition, action] = log.slice(-2).map((entry) => entry.headers['x-forgewarden-action']);
    expect(precondition).toMatch(/^[0-9a-f]{12}$/);
    expect(action).toBe(precondition);
    expect(log.slice(0, 3).every((entry) => entry.headers['x-forgewarden-action'] === undefined)).toBe(true);
  });

  it('takes the forge’s 403 "Job is not retryable" after a person’s retry as done by them, not as a failure', async () => {
    const engine = (await app()).get(EngineService);
    // The person retries just after the bot's precondition read the pipeline, before its POST reaches the forge.
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'POST', path: '/jobs/101/retry$' },
      () => engine.runPass('flaky', 'act'),
      async () => {
        expect((await asPerson(harness.sandbox, 'POST', '/projects/1/jobs/101/retry')).status).toBe(200);
      },
    );
    const record = pass.records.find((r) => r.decision.key === '1:101');
    expect(record?.outcome).toBe('stale');
    expect(record?.detail).toMatch(
      /^the forge refused \(403 Forbidden - Job is not retryable\): newer attempt \d+ exists/,
    );
    // The forge refused the bot's retry (403) and holds one retry: the person's.
    expect(retries(101).map((entry) => entry.status)).toEqual([200, 403]);
    expect(attemptsOf(10)).toBe(2);
    expect(await harness.redis.hkeys(`${harness.prefix}:unsettled:flaky`)).toEqual([]);
  });

  it('parks a retry the forge refuses for good (an archived project) instead of failing every pass', async () => {
    expect(await control(harness.sandbox, 'POST', '/projects/acme%2Fsvc-2/archive')).toBe(200);
    const engine = (await app()).get(EngineService);
    const first = await engine.runPass('flaky', 'act');
    expect(first.error).toBeUndefined();
    expect(first.records.find((r) => r.decision.key === '2:201')).toMatchObject({
      outcome: 'refused',
      detail: expect.stringMatching(/^POST projects\/2\/jobs\/201\/retry → 403: 403 Forbidden; parked until /),
    });
    expect(first.records.filter((r) => r.outcome === 'done').map((r) => r.decision.key)).toEqual(['1:101', '3:301']);
    // Later passes do not send it again before its time; the target stays open, so it is not forgotten.
    for (let pass = 0; pass < 3; pass++) {
      const again = await engine.runPass('flaky', 'act');
      expect(again.records.find((r) => r.decision.key === '2:201')?.outcome).toBe('refused');
    }
    expect(retries(201)).toHaveLength(1);
    expect(await harness.redis.hkeys(`${harness.prefix}:unsettled:flaky`)).toEqual(['2:201']);
    const audit = await (await app()).get(AuditTrail).read(0);
    expect(audit.filter((entry) => entry.outcome === 'refused')).toHaveLength(1);
  });

  it('goes on with the other projects when one is closed to the token (404) or its reads refused (403), and names it', async () => {
    expect(await control(harness.sandbox, 'POST', '/access', { user: 'root', project: 'acme/svc-1', level: 0 })).toBe(
      200,
    );
    // A forge that refuses to list one project's jobs (a token without the role where jobs are not public).
    expect(
      await control(harness.sandbox, 'POST', '/faults', {
        method: 'GET',
        path: '^/api/v4/projects/acme%2Fsvc-3/jobs$',
        status: 403,
      }),
    ).toBe(201);
    const engine = (await app()).get(EngineService);
    const pass = await engine.runPass('flaky', 'act');
    expect(pass.error).toBeUndefined();
    expect(pass.unobserved?.map((entry) => entry.target)).toEqual(['project acme/svc-1', 'project acme/svc-3']);
    expect(pass.unobserved?.[0]?.reason).toMatch(/^GET projects\/acme%2Fsvc-1\/jobs\?.* → 404: 404 Project Not Found$/);
    expect(pass.unobserved?.[1]?.reason).toMatch(/^GET projects\/acme%2Fsvc-3\/jobs\?.* → 403: 403 Forbidden$/);
    expect(pass.records.filter((r) => r.outcome === 'done').map((r) => r.decision.key)).toEqual(['2:201']);
    expect(retries(201)).toHaveLength(1);

    // Once the token may read them again, their failures are found: the watermark did not move past them.
    expect(await control(harness.sandbox, 'DELETE', '/access')).toBe(204);
    expect(await control(harness.sandbox, 'DELETE', '/faults')).toBe(204);
    const later = await engine.runPass('flaky', 'act');
    expect(later.unobserved).toBeUndefined();
    expect(later.records.filter((r) => r.outcome === 'done').map((r) => r.decision.key)).toEqual(['1:101', '3:301']);
  });
});
