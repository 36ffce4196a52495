import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { EngineService } from '../../src/engine/engine.service';
import { MetricsService } from '../../src/metrics/metrics.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { type ServedDaemon, useEngineHarness } from '../support/engine-harness';
import { acmeGroup, baseWorld, type ProjectInput } from '../support/world-builders';

const SECRET = 'webhook-secret-for-tests-only';
const RESET = 'Error: read ECONNRESET: connection reset by peer\n';

/** A project whose pipeline `id * 100` has one failed job `id * 100 + 1` the policy retries. */
function withFailedJob(path: string, namespace: string, id: number): ProjectInput {
  return {
    id,
    path,
    namespace,
    pipelines: [
      {
        id: id * 100,
        ref: 'main',
        jobs: [{ id: id * 100 + 1, name: 'flaky', stage: 'test', status: 'failed', finished_at: 'now-1m', log: RESET }],
      },
    ],
  };
}

function world(): World {
  return {
    ...baseWorld({
      groups: [acmeGroup(), { id: 13, path: 'other' }],
      projects: [
        withFailedJob('api', 'acme', 1),
        withFailedJob('web', 'acme', 2),
        withFailedJob('elsewhere', 'other', 3),
      ],
    }),
    now: undefined,
  };
}

/** A `Job Hook` body as the forge sends it (GitLab's webhook events documentation), for the failed job of project `id`. */
function jobHook(id: number, path: string): Record<string, unknown> {
  return {
    object_kind: 'build',
    ref: 'main',
    tag: false,
    build_id: id * 100 + 1,
    build_name: 'flaky',
    build_stage: 'test',
    build_status: 'failed',
    build_finished_at: new Date().toISOString(),
    build_failure_reason: 'script_failure',
    build_allow_failure: false,
    pipeline_id: id * 100,
    project_id: id,
    project_name: path.replace('/', ' / '),
    project: { id, name: path.split('/')[1], path_with_namespace: path },
  };
}

/** Deliveries the daemon counted with this event and result. */
async function counted(daemon: ServedDaemon, event: string, result: string): Promise<number> {
  const metric = await daemon.app.get(MetricsService).webhookDeliveries.get();
  return metric.values.find((value) => value.labels.event === event && value.labels.result === result)?.value ?? 0;
}

describe('webhooks: the receiver and the retries it leads to, over HTTP with a real Redis', () => {
  const harness = useEngineHarness({ name: 'webhooks', world, policyTypes: POLICY_TYPES });
  const POLICY = [
    '  - name: flaky',
    '    type: job_retry',
    '    projects: ["acme/*"]',
    '    interval: 1h',
    '    match: { failure_log: ["(?i)connection reset"] }',
  ];

  const serve = (): Promise<ServedDaemon> => harness.serve({ webhookToken: SECRET, policies: POLICY });

  /** `headers` override the forge's; one given as undefined is not sent at all. */
  async function deliver(
    daemon: ServedDaemon,
    body: unknown,
    headers: Record<string, string | undefined> = {},
  ): Promise<{ status: number; body: Record<string, string> }> {
    const sent = {
      'content-type': 'application/json',
      'x-gitlab-event': 'Job Hook',
      'x-gitlab-token': SECRET,
      'x-gitlab-event-uuid': randomUUID(),
      ...headers,
    };
    const answer = await request(`${daemon.url}/webhooks/gitlab`, {
      method: 'POST',
      headers: Object.fromEntries(
        Object.entries(sent).filter((entry): entry is [string, string] => entry[1] !== undefined),
      ),
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: answer.statusCode, body: (await answer.body.json()) as Record<string, string> };
  }

  const retries = () =>
    harness.sandbox.state.requestLog
      .filter((entry) => entry.method === 'POST' && entry.path.endsWith('/retry'))
      .map((entry) => entry.path);

  /** Waits for `count` retries, at most `ms`; the retries found. */
  async function retriesWithin(count: number, ms: number): Promise<string[]> {
    const deadline = Date.now() + ms;
    while (retries().length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    return retries();
  }

  /** Lets queued work settle, then reads the retries. */
  async function settledRetries(): Promise<string[]> {
    await new Promise((resolve) => setTimeout(resolve, 500));
    return retries();
  }

  // How soon is the bench's (docs/benchmarks.md, failure → retry); here, that the delivery and not a poll led to it.
  it('retries a failed job on its delivery, long before the next poll', async () => {
    const daemon = await serve();
    const answer = await deliver(daemon, jobHook(1, 'acme/api'));
    expect(answer).toEqual({ status: 200, body: { status: 'accepted' } });
    // The poll is an hour away (interval: 1h): a retry within 15 s came from the delivery.
    expect(await retriesWithin(1, 15_000)).toEqual(['/api/v4/projects/1/jobs/101/retry']);
    // Counted once the handler is done, just after the retry went out.
    expect(await settledRetries()).toHaveLength(1);
    expect(await counted(daemon, 'job', 'acted')).toBe(1);
    expect(await counted(daemon, 'job', 'accepted')).toBe(1);
  });

  it('answers a wrong token, an empty one and a delivery without X-Gitlab-Token with 401 and acts on nothing', async () => {
    const daemon = await serve();
    const refused = { status: 401, body: { message: '401 Unauthorized' } };
    expect(await deliver(daemon, jobHook(1, 'acme/api'), { 'x-gitlab-token': 'not-the-secret' })).toEqual(refused);
    expect(await deliver(daemon, jobHook(1, 'acme/api'), { 'x-gitlab-token': '' })).toEqual(refused);
    // A header that is not there at all is another path through the check than an empty one.
    expect(await deliver(daemon, jobHook(1, 'acme/api'), { 'x-gitlab-token': undefined })).toEqual(refused);
    expect(await settledRetries()).toEqual([]);
    expect(await harness.redis.keys(`${harness.prefix}:webhook:*`)).toEqual([]);
    expect(await counted(daemon, 'job', 'unauthorized')).toBe(3);
  });

  it('retries once for the same delivery twice, and once for a delivery and a poll', async () => {
    const daemon = await serve();
    const uuid = randomUUID();
    expect((await deliver(daemon, jobHook(1, 'acme/api'), { 'x-gitlab-event-uuid': uuid })).body.status).toBe(
      'accepted',
    );
    expect((await deliver(daemon, jobHook(1, 'acme/api'), { 'x-gitlab-event-uuid': uuid })).body.status).toBe(
      'duplicate',
    );
    // The same event sent again by a newer forge: the Idempotency-Key is what stays the same.
    await deliver(daemon, jobHook(2, 'acme/web'), { 'idempotency-key': 'delivery-7' });
    expect((await deliver(daemon, jobHook(2, 'acme/web'), { 'idempotency-key': 'delivery-7' })).body.status).toBe(
      'duplicate',
    );
    await retriesWithin(2, 2000);

    const poll = await daemon.app.get(EngineService).runPass('flaky', 'act');
    expect(poll.error).toBeUndefined();
    expect((await settledRetries()).sort()).toEqual([
      '/api/v4/projects/1/jobs/101/retry',
      '/api/v4/projects/2/jobs/201/retry',
    ]);
  });

  it('retries once when two replicas receive the same event', async () => {
    const [first, second] = await Promise.all([serve(), serve()]);
    const uuid = randomUUID();
    const answers = await Promise.all([
      deliver(first, jobHook(1, 'acme/api'), { 'x-gitlab-event-uuid': uuid }),
      deliver(second, jobHook(1, 'acme/api'), { 'x-gitlab-event-uuid': uuid }),
    ]);
    expect(answers.map((answer) => answer.body.status).sort()).toEqual(['accepted', 'duplicate']);
    // Distinct deliveries of one failure (the forge sending it to two hooks) still retry once: the ledger sees to it.
    await deliver(first, jobHook(1, 'acme/api'));
    await deliver(second, jobHook(1, 'acme/api'));
    expect(await settledRetries()).toEqual(['/api/v4/projects/1/jobs/101/retry']);
  });

  it('counts and ignores events for projects no policy covers, other kinds, and jobs that did not fail', async () => {
    const daemon = await serve();
    expect((await deliver(daemon, jobHook(3, 'other/elsewhere'))).body.status).toBe('accepted');
    expect((await deliver(daemon, { ...jobHook(1, 'acme/api'), build_status: 'success' })).body.status).toBe('ignored');
    expect(
      (await deliver(daemon, { object_kind: 'push', project_id: 1 }, { 'x-gitlab-event': 'Push Hook' })).body.status,
    ).toBe('ignored');
    expect(await settledRetries()).toEqual([]);
    expect(await counted(daemon, 'job', 'not_covered')).toBe(1);
    expect(await counted(daemon, 'other', 'ignored')).toBe(1);
  });

  it('refuses a body that is not JSON, too large, or of another type, with nothing queued', async () => {
    const daemon = await serve();
    expect((await deliver(daemon, '{"object_kind": "bu')).status).toBe(400);
    expect(
      (await deliver(daemon, JSON.stringify(jobHook(1, 'acme/api')), { 'content-type': 'text/plain' })).status,
    ).toBe(415);
    expect(
      (await deliver(daemon, JSON.stringify({ ...jobHook(1, 'acme/api'), padding: 'x'.repeat(1_100_000) }))).status,
    ).toBe(413);
    expect(await settledRetries()).toEqual([]);
  });

  it('retries the failed jobs of a failed pipeline from a Pipeline Hook', async () => {
    const daemon = await serve();
    const body = {
      object_kind: 'pipeline',
      object_attributes: { id: 200, status: 'failed', ref: 'main' },
      project: { id: 2, path_with_namespace: 'acme/web' },
      builds: [{ id: 201, name: 'flaky', stage: 'test', status: 'failed' }],
    };
    expect((await deliver(daemon, body, { 'x-gitlab-event': 'Pipeline Hook' })).body.status).toBe('accepted');
    expect(await retriesWithin(1, 15_000)).toEqual(['/api/v4/projects/2/jobs/201/retry']);
  });
});

describe('webhooks: a burst of 1,000 deliveries', () => {
  const PROJECTS = 10;
  const JOBS = 100;
  /** Project `p` (1..10) in acme, one pipeline `p * 1000` with jobs `p * 1000 + j` named `job-j`, all failed. */
  const burstWorld = (): World => ({
    ...baseWorld({
      groups: [acmeGroup()],
      projects: Array.from({ length: PROJECTS }, (_, index) => {
        const id = index + 1;
        return {
          id,
          path: `service-${id}`,
          namespace: 'acme',
          pipelines: [
            {
              id: id * 1000,
              ref: 'main',
              jobs: Array.from({ length: JOBS }, (_, j) => ({
                id: id * 1000 + j + 1,
                name: `job-${j + 1}`,
                stage: 'test',
                status: 'failed' as const,
                finished_at: 'now-1m',
                log: RESET,
              })),
            },
          ],
        };
      }),
    }),
    now: undefined,
  });
  const harness = useEngineHarness({ name: 'webhooks-burst', world: burstWorld, policyTypes: POLICY_TYPES });

  // In a dry run: retries are writes, which the client spaces at the budget's pace (10 ms apart at 6,000 a minute);
  // what this shows is that every delivery is answered, queued, observed and decided.
  it('answers every delivery at once, decides on each job once, and stays inside the request budget', async () => {
    const budget = 6_000;
    const daemon = await harness.serve({
      webhookToken: SECRET,
      dryRun: true,
      gitlab: `max_requests_per_minute: ${budget}`,
      policies: [
        '  - name: flaky',
        '    type: job_retry',
        '    projects: ["acme/*"]',
        '    interval: 1h',
        '    max_actions_per_run: 1000',
        '    match: { failure_log: ["(?i)connection reset"] }',
      ],
    });
    const bodies = Array.from({ length: PROJECTS * JOBS }, (_, index) => {
      const project = Math.floor(index / JOBS) + 1;
      const job = project * 1000 + (index % JOBS) + 1;
      return {
        ...jobHook(project, `acme/service-${project}`),
        build_id: job,
        build_name: `job-${(index % JOBS) + 1}`,
        pipeline_id: project * 1000,
      };
    });
    const statuses: number[] = [];
    // 50 senders at once, as a forge's webhook workers would send them.
    const queue = [...bodies];
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let body = queue.shift(); body; body = queue.shift()) {
          const answer = await request(`${daemon.url}/webhooks/gitlab`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-gitlab-event': 'Job Hook',
              'x-gitlab-token': SECRET,
              'x-gitlab-event-uuid': randomUUID(),
            },
            body: JSON.stringify(body),
          });
          await answer.body.dump();
          statuses.push(answer.statusCode);
        }
      }),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(1_000);

    const metrics = daemon.app.get(MetricsService);
    const wouldRetry = async () =>
      (await metrics.decisions.get()).values.find(
        (value) => value.labels.action === 'retry' && value.labels.outcome === 'would_act',
      )?.value ?? 0;
    // Waited for while decisions keep coming: a loaded machine is slower, but a stuck queue stops adding any.
    let seen = await wouldRetry();
    let movedAt = Date.now();
    while (seen < 1_000 && Date.now() - movedAt < 20_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = await wouldRetry();
      if (now > seen) [seen, movedAt] = [now, Date.now()];
    }
    expect(seen).toBe(1_000);
    expect(await counted(daemon, 'job', 'acted')).toBe(1_000);

    // Two reads per delivery (its pipeline, which holds the job and its attempts, and its log) and the group's
    // listing once; no write in a dry run.
    const log = harness.sandbox.state.requestLog.filter((entry) => entry.path.startsWith('/api/v4/'));
    expect(log.filter((entry) => entry.method !== 'GET')).toEqual([]);
    expect(log.filter((entry) => /\/jobs\/\d+$/.test(entry.path))).toEqual([]);
    expect(log.length).toBeLessThanOrEqual(2 * 1_000 + 5);
    expect(log.length).toBeLessThanOrEqual(budget);
  }, 240_000);
});
