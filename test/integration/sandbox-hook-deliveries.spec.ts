import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type GitlabClient, type ProjectHook } from '../../src/gitlab';
import type { HookDeliveryRecord, World } from '../../src/sandbox';
import { SANDBOX_VERSION } from '../../src/sandbox/version';
import { useSandboxClients } from '../support/sandbox-clients';
import { call } from '../support/sandbox-http';
import { apiProject, baseWorld, MAINTAINER_TOKEN, USER_TOKEN } from '../support/world-builders';

/**
 * Webhook deliveries of the sandbox forge, received by a small HTTP server in the test: a job moved through the
 * control API (or retried through the API) reaches every subscribed hook as the forge sends it (headers, payload),
 * asynchronously; failures are not retried and disable the hook as GitLab's auto-disabling does.
 */

const API = 1;
const PIPELINE = 7;
const TEST_JOB = 5;
const LINT_JOB = 6;
const JOB_HOOK = 1;
const PIPELINE_HOOK = 2;
const SECRET = 'receiver-secret-5d1c';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** Answers each delivery with `answer`'s status ('hang': never). */
class Receiver {
  readonly received: Received[] = [];
  answer: (request: Received) => number | 'hang' | Promise<number> = () => 200;
  private server: Server | undefined;
  private readonly hanging: ServerResponse[] = [];
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request = {
          path: req.url ?? '/',
          headers: req.headers,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
        };
        this.received.push(request);
        void Promise.resolve(this.answer(request)).then((status) => {
          if (status === 'hang') this.hanging.push(res);
          else res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}');
        });
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const res of this.hanging.splice(0)) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The deliveries one path received. */
  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }
}

const receiver = new Receiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.close());
beforeEach(() => {
  receiver.received.length = 0;
  receiver.answer = () => 200;
});

/**
 * acme/api: pipeline 7 with `test` (5, running) and `lint` (6, success); hook 1 gets job events with a token and a
 * custom header, hook 2 pipeline events only.
 */
function world(overrides: Partial<World> = {}): World {
  return baseWorld({
    settings: { hook_timeout_ms: 500 },
    projects: [
      apiProject({
        pipelines: [
          {
            id: PIPELINE,
            jobs: [
              { id: TEST_JOB, name: 'test', stage: 'test', status: 'running', started_at: 'now-2m' },
              { id: LINT_JOB, name: 'lint', stage: 'lint', status: 'success' },
            ],
          },
        ],
        hooks: [
          {
            id: JOB_HOOK,
            url: `${receiver.url}/jobs`,
            token: SECRET,
            push_events: false,
            job_events: true,
            custom_headers: { 'X-Team': 'team-secret' },
          },
          { id: PIPELINE_HOOK, url: `${receiver.url}/pipelines`, push_events: false, pipeline_events: true },
        ],
      }),
    ],
    ...overrides,
  });
}

describe('sandbox forge: webhook deliveries', () => {
  const forge = useSandboxClients(() => world());
  const control = (path: string, method = 'GET', body?: unknown) =>
    call(forge.sandbox.url, `/__sandbox${path}`, { method, body });
  const moveJob = (id: number, status: string, extra: Record<string, unknown> = {}) =>
    control(`/jobs/${id}`, 'POST', { status, ...extra });
  const settled = async (): Promise<void> => {
    expect((await control('/hook-deliveries/settled')).status).toBe(204);
  };
  const deliveries = async (query = ''): Promise<HookDeliveryRecord[]> =>
    (await control(`/hook-deliveries${query}`)).json as HookDeliveryRecord[];
  const mia = (): GitlabClient => forge.client(MAINTAINER_TOKEN);
  const sandboxNow = async (): Promise<number> => Date.parse(((await control('/clock')).json as { now: string }).now);

  it('posts one Job Hook and one Pipeline Hook when a job fails, with the forge’s headers and payload, after answering', async () => {
    // The receiver holds its answers until the test lets go: the control call must not wait for them.
    let release: () => void = () => undefined;
    const gate = new Promise<number>((resolve) => (release = () => resolve(200)));
    receiver.answer = () => gate;

    const moved = await moveJob(TEST_JOB, 'failed', { failure_reason: 'script_failure' });
    expect(moved.status).toBe(200);
    expect(await deliveries()).toEqual([]);
    release();
    await settled();

    expect(receiver.received.map((r) => r.path).sort()).toEqual(['/jobs', '/pipelines']);
    const [jobDelivery] = receiver.at('/jobs');
    const [pipelineDelivery] = receiver.at('/pipelines');

    expect(jobDelivery.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': `GitLab/${SANDBOX_VERSION.version}`,
      'x-gitlab-event': 'Job Hook',
      'x-gitlab-token': SECRET,
      'x-gitlab-instance': forge.sandbox.url,
      'x-team': 'team-secret',
    });
    for (const name of ['x-gitlab-event-uuid', 'x-gitlab-webhook-uuid', 'idempotency-key'])
      expect(jobDelivery.headers[name]).toMatch(UUID);
    expect(pipelineDelivery.headers).toMatchObject({
      'x-gitlab-event': 'Pipeline Hook',
      'content-type': 'application/json',
    });
    expect(pipelineDelivery.headers).not.toHaveProperty('x-gitlab-token');
    // One event UUID per event; every request its own webhook UUID and idempotency key.
    expect(pipelineDelivery.headers['x-gitlab-event-uuid']).not.toBe(jobDelivery.headers['x-gitlab-event-uuid']);

    const pipeline = forge.sandbox.state.pipelines.get(PIPELINE);
    const job = forge.sandbox.state.jobs.get(TEST_JOB);
    expect(jobDelivery.body).toMatchObject({
      object_kind: 'build',
      ref: 'main',
      tag: false,
      sha: pipeline?.sha,
      before_sha: '0000000000000000000000000000000000000000',
      retries_count: 0,
      build_id: TEST_JOB,
      build_name: 'test',
      build_stage: 'test',
      build_status: 'failed',
      build_failure_reason: 'script_failure',
      build_started_at: job?.started_at,
      build_finished_at: job?.finished_at,
      build_allow_failure: false,
      pipeline_id: PIPELINE,
      project_id: API,
      project_name: 'Acme / API',
      runner: null,
      environment: null,
      user: { id: 1, username: 'root', name: 'Administrator', email: '[REDACTED]' },
      commit: { id: PIPELINE, sha: pipeline?.sha, status: 'failed', author_name: 'Administrator' },
      repository: {
        name: 'API',
        homepage: `${forge.sandbox.url}/acme/api`,
        git_http_url: `${forge.sandbox.url}/acme/api.git`,
      },
      project: {
        id: API,
        name: 'API',
        path_with_namespace: 'acme/api',
        namespace: 'Acme',
        default_branch: 'main',
        visibility_level: 0,
      },
    });
    expect(jobDelivery.body.build_duration).toBeGreaterThanOrEqual(120);

    expect(pipelineDelivery.body).toMatchObject({
      object_kind: 'pipeline',
      object_attributes: {
        id: PIPELINE,
        iid: 1,
        ref: 'main',
        sha: pipeline?.sha,
        status: 'failed',
        detailed_status: 'failed',
        stages: ['test', 'lint'],
        url: `${forge.sandbox.url}/acme/api/-/pipelines/${PIPELINE}`,
      },
      merge_request: null,
      project: { id: API, path_with_namespace: 'acme/api' },
      user: { username: 'root' },
    });
    expect((pipelineDelivery.body.builds as { id: number; status: string }[]).map((b) => [b.id, b.status])).toEqual([
      [TEST_JOB, 'failed'],
      [LINT_JOB, 'success'],
    ]);

    // The record of each attempt, for tests: the token and custom header values masked, as in the forge's logs.
    const records = await deliveries();
    expect(records.map((d) => [d.hook_id, d.event, d.status, d.result, d.error])).toEqual(
      expect.arrayContaining([
        [JOB_HOOK, 'Job Hook', 200, 'ok', null],
        [PIPELINE_HOOK, 'Pipeline Hook', 200, 'ok', null],
      ]),
    );
    const jobRecord = records.find((d) => d.hook_id === JOB_HOOK);
    expect(jobRecord).toMatchObject({
      event_uuid: jobDelivery.headers['x-gitlab-event-uuid'],
      webhook_uuid: jobDelivery.headers['x-gitlab-webhook-uuid'],
      idempotency_key: jobDelivery.headers['idempotency-key'],
      request_headers: { 'X-Gitlab-Token': '[REDACTED]', 'X-Team': '[REDACTED]' },
      request_body: jobDelivery.body,
    });
    expect(JSON.stringify(records)).not.toMatch(/receiver-secret|team-secret/);
    expect((await deliveries(`?hook_id=${PIPELINE_HOOK}`)).map((d) => d.event)).toEqual(['Pipeline Hook']);
  });

  it('sends the new job of a retry, and every status a runner moves a job through, in order', async () => {
    await moveJob(TEST_JOB, 'failed');
    await settled();
    receiver.received.length = 0;

    const retried = await forge.client(USER_TOKEN).jobs.retry(API, TEST_JOB);
    await settled();
    expect(receiver.at('/jobs').map((r) => [r.body.build_id, r.body.build_status, r.body.retries_count])).toEqual([
      [retried.id, 'pending', 1],
    ]);
    expect(receiver.at('/pipelines').map((r) => (r.body.object_attributes as { status: string }).status)).toEqual([
      'pending',
    ]);

    await moveJob(retried.id, 'running');
    await moveJob(retried.id, 'success');
    await settled();
    expect(receiver.at('/jobs').map((r) => r.body.build_status)).toEqual(['pending', 'running', 'success']);
    expect(receiver.at('/pipelines').map((r) => (r.body.object_attributes as { status: string }).status)).toEqual([
      'pending',
      'running',
      'success',
    ]);
    // A move that changes nothing is no event.
    await moveJob(retried.id, 'success');
    await settled();
    expect(receiver.received).toHaveLength(6);
  });

  it('delivers to a hook created through the API, and to none that does not subscribe', async () => {
    const created = await mia().projectHooks.create(API, {
      url: `${receiver.url}/created`,
      job_events: true,
      push_events: false,
    });
    await mia().projectHooks.edit(API, PIPELINE_HOOK, { pipeline_events: false });
    await moveJob(LINT_JOB, 'failed');
    await settled();
    expect(receiver.received.map((r) => [r.path, r.body.build_id])).toEqual(
      expect.arrayContaining([
        ['/jobs', LINT_JOB],
        ['/created', LINT_JOB],
      ]),
    );
    expect(receiver.received).toHaveLength(2);
    expect(receiver.at('/created')[0].headers).not.toHaveProperty('x-gitlab-token');
    expect((await deliveries()).map((d) => d.hook_id).sort()).toEqual([JOB_HOOK, created.id].sort());
  });

  it('does not retry a failed delivery, and disables the hook for a minute after 4 failures in a row, then doubles', async () => {
    receiver.answer = (request) => (request.path === '/jobs' ? 500 : 200);
    const show = (): Promise<ProjectHook> => mia().projectHooks.show(API, JOB_HOOK);
    const statuses = ['pending', 'running', 'failed', 'running'];
    for (const [i, status] of statuses.entries()) {
      await moveJob(TEST_JOB, status);
      await settled();
      // One attempt per event: the forge does not retry a failed delivery.
      expect(receiver.at('/jobs')).toHaveLength(i + 1);
      expect((await show()).alert_status).toBe(i < 3 ? 'executable' : 'temporarily_disabled');
    }
    const disabled = await show();
    const backoff = Date.parse(disabled.disabled_until ?? '') - (await sandboxNow());
    expect(backoff).toBeGreaterThan(55_000);
    expect(backoff).toBeLessThanOrEqual(60_000);
    expect((await deliveries(`?hook_id=${JOB_HOOK}`)).map((d) => [d.status, d.result])).toEqual(
      Array(4).fill([500, 'error']),
    );

    // While disabled the hook is not called, and nothing is recorded; the pipeline hook goes on.
    await moveJob(TEST_JOB, 'failed');
    await settled();
    expect(receiver.at('/jobs')).toHaveLength(4);
    expect(await deliveries(`?hook_id=${JOB_HOOK}`)).toHaveLength(4);

    // After the backoff it is tried again; a 5th failure disables it for twice as long.
    await control('/clock', 'POST', { advance_seconds: 61 });
    expect((await show()).alert_status).toBe('executable');
    await moveJob(TEST_JOB, 'running');
    await settled();
    expect(receiver.at('/jobs')).toHaveLength(5);
    const again = await show();
    expect(again.alert_status).toBe('temporarily_disabled');
    const secondBackoff = Date.parse(again.disabled_until ?? '') - (await sandboxNow());
    expect(secondBackoff).toBeGreaterThan(115_000);
    expect(secondBackoff).toBeLessThanOrEqual(120_000);

    // A 2xx once the backoff is over resets the count: executable, no disabled_until.
    await control('/clock', 'POST', { advance_seconds: 121 });
    receiver.answer = () => 200;
    await moveJob(TEST_JOB, 'success');
    await settled();
    expect(receiver.at('/jobs').map((r) => r.body.build_status)).toEqual([
      'pending',
      'running',
      'failed',
      'running',
      'running',
      'success',
    ]);
    expect(await show()).toMatchObject({ alert_status: 'executable', disabled_until: null });
    expect(forge.sandbox.state.hooks.hooks.get(JOB_HOOK)?.recent_failures).toBe(0);
  });

  it('counts a refused connection and a timeout as failures, recorded with the reason', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    await mia().projectHooks.edit(API, JOB_HOOK, { url: `http://127.0.0.1:${deadPort}/gone` });
    await mia().projectHooks.edit(API, PIPELINE_HOOK, { url: `${receiver.url}/slow` });
    receiver.answer = (request) => (request.path === '/slow' ? 'hang' : 200);

    await moveJob(TEST_JOB, 'failed');
    await settled();
    const records = await deliveries();
    const refused = records.find((d) => d.hook_id === JOB_HOOK);
    const slow = records.find((d) => d.hook_id === PIPELINE_HOOK);
    expect(refused).toMatchObject({ status: null, result: 'error', url: `http://127.0.0.1:${deadPort}/gone` });
    expect(refused?.error).toMatch(/ECONNREFUSED/);
    // The world sets hook_timeout_ms: 500.
    expect(slow).toMatchObject({ status: null, result: 'error', error: 'timed out after 500 ms' });
    expect(receiver.at('/slow')).toHaveLength(1);
    expect(forge.sandbox.state.hooks.hooks.get(JOB_HOOK)?.recent_failures).toBe(1);
    expect(forge.sandbox.state.hooks.hooks.get(PIPELINE_HOOK)?.recent_failures).toBe(1);
  });
});
