import { request } from 'undici';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { apiClient, call } from '../support/sandbox-http';
import { aProject, baseWorld, USER_TOKEN } from '../support/world-builders';

interface LogEntry {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  status: number;
  fault: string | null;
  duration_ms: number;
}

/** Not the token of any job in the world: a refused request is logged as any other. */
const JOB_TOKEN = 'job-token-for-the-log-test';

const BODY_SECRET = 'secret-in-a-request-body';

/** The sandbox of the current test: each block below starts its own, on its own world. */
let sandbox: RunningSandbox;
const alice = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, USER_TOKEN);
const control = (path: string, method = 'GET', body?: unknown): ReturnType<typeof call> =>
  call(sandbox.url, `/__sandbox${path}`, { method, body });
const log = async (): Promise<LogEntry[]> => (await control('/requests')).json as LogEntry[];

describe('sandbox forge: control API, faults and request log', () => {
  beforeEach(async () => {
    sandbox = await startSandbox({
      world: baseWorld({
        projects: [aProject('api', { id: 1, pipelines: [{ jobs: [{ id: 5, name: 't', status: 'pending' }] }] })],
      }),
    });
  });
  afterEach(() => sandbox.close());

  it('records requests without the credentials in their headers, parameters and bodies, and clears the log', async () => {
    await alice()('/projects/1/jobs?scope[]=failed', { headers: { 'User-Agent': 'forgewarden-test' } });
    await call(sandbox.url, `/api/v4/user?private_token=${USER_TOKEN}`);
    await call(sandbox.url, '/api/v4/user', { headers: { Authorization: `Bearer ${USER_TOKEN}` } });
    await alice()('/user/keys', { method: 'POST', body: { title: 'x', key: 'bad' } });
    // Every other way a credential travels: a job token (refused or not, the request is logged) and access_token.
    await call(sandbox.url, '/api/v4/job', { headers: { 'JOB-TOKEN': JOB_TOKEN } });
    await call(sandbox.url, `/api/v4/job?job_token=${JOB_TOKEN}`);
    await call(sandbox.url, `/api/v4/user?access_token=${USER_TOKEN}`);
    // Secrets written in bodies: an integration's password, a webhook's token, custom header and URL variable values.
    await alice()('/projects/1/services/issue-tracker-b', {
      method: 'PUT',
      body: { url: 'https://jira.test', username: 'jira', password: BODY_SECRET },
    });
    await alice()('/projects/1/hooks', {
      method: 'POST',
      body: {
        url: 'https://x.test/{path}',
        token: BODY_SECRET,
        custom_headers: [{ key: 'X-Team', value: BODY_SECRET }],
        url_variables: [{ key: 'path', value: BODY_SECRET }],
      },
    });
    const entries = await log();
    expect(entries.map((e) => [e.method, e.path, e.status])).toEqual([
      ['GET', '/api/v4/projects/1/jobs', 200],
      ['GET', '/api/v4/user', 200],
      ['GET', '/api/v4/user', 200],
      ['POST', '/api/v4/user/keys', 400],
      ['GET', '/api/v4/job', 401],
      ['GET', '/api/v4/job', 401],
      ['GET', '/api/v4/user', 200],
      ['PUT', '/api/v4/projects/1/services/issue-tracker-b', 403],
      ['POST', '/api/v4/projects/1/hooks', 403],
    ]);
    expect(entries[4].headers['job-token']).toBe('[redacted]');
    expect(entries[5].query).toEqual({ job_token: '[redacted]' });
    expect(entries[6].query).toEqual({ access_token: '[redacted]' });
    expect(JSON.stringify(entries)).not.toContain(JOB_TOKEN);
    expect(entries[7].body).toEqual({ url: 'https://jira.test', username: 'jira', password: '[redacted]' });
    expect(entries[8].body).toEqual({
      url: 'https://x.test/{path}',
      token: '[redacted]',
      custom_headers: [{ key: 'X-Team', value: '[redacted]' }],
      url_variables: [{ key: 'path', value: '[redacted]' }],
    });
    expect(JSON.stringify(entries)).not.toContain(BODY_SECRET);
    expect(entries[0]).toMatchObject({
      query: { 'scope[]': 'failed' },
      headers: { 'private-token': '[redacted]', 'user-agent': 'forgewarden-test' },
      fault: null,
    });
    expect(entries[1].query).toEqual({ private_token: '[redacted]' });
    expect(entries[2].headers.authorization).toBe('Bearer [redacted]');
    expect(entries[3].body).toEqual({ title: 'x', key: 'bad' });
    expect(JSON.stringify(entries)).not.toContain(USER_TOKEN);
    // The control API itself is not logged.
    expect((await control('/requests', 'DELETE')).status).toBe(204);
    expect(await log()).toEqual([]);
  });

  it('answers 429 with Retry-After, and without it but with RateLimit-Reset', async () => {
    await control('/faults', 'POST', { path: '/jobs$', status: 429, retry_after: 7, times: 1 });
    const limited = await alice()('/projects/1/jobs');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect((await alice()('/projects/1/jobs')).status).toBe(200);

    await control('/faults', 'DELETE');
    await control('/clock', 'POST', { now: '2025-06-02T12:00:00Z' });
    await control('/faults', 'POST', { status: 429, ratelimit_reset_in: 30, times: 1 });
    const bare = await alice()('/user');
    expect(bare.status).toBe(429);
    expect(bare.headers.get('retry-after')).toBeNull();
    expect(Number(bare.headers.get('ratelimit-reset'))).toBe(Date.parse('2025-06-02T12:00:30Z') / 1000);
    expect((await log()).map((e) => [e.status, e.fault])).toEqual([
      [429, 'status 429'],
      [200, null],
      [429, 'status 429'],
    ]);
  });

  it('plays a 503 sequence on one route only', async () => {
    await control('/faults', 'POST', { method: 'GET', path: '^/api/v4/user$', sequence: [503, 503, 'pass'] });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await alice()('/user')).status);
    expect(statuses).toEqual([503, 503, 200, 200]);
    expect((await alice()('/projects/1/jobs')).status).toBe(200);
    await control('/faults', 'POST', { status: 500, times: 1 });
    await control('/faults', 'POST', { status: 502, times: 1 });
    expect((await alice()('/user')).json).toEqual({ message: '500 Internal Server Error' });
    expect((await alice()('/user')).status).toBe(502);
  });

  it('resets the connection', async () => {
    await control('/faults', 'POST', { sequence: ['reset'] });
    await expect(request(`${sandbox.url}/api/v4/user`, { headers: { 'PRIVATE-TOKEN': USER_TOKEN } })).rejects.toThrow();
    expect((await alice()('/user')).status).toBe(200);
    expect((await log()).map((e) => [e.status, e.fault])).toEqual([
      [0, 'reset'],
      [200, null],
    ]);
  });

  it('adds latency', async () => {
    await control('/faults', 'POST', { path: '/user$', latency_ms: 150 });
    expect((await alice()('/user')).status).toBe(200);
    const [entry] = await log();
    expect(entry.duration_ms).toBeGreaterThanOrEqual(140);
  });

  it('holds a request at the door until it is released, so a person can act in between', async () => {
    const added = await control('/holds', 'POST', { method: 'GET', path: '/user$' });
    expect(added.status).toBe(201);
    const { id } = added.json as { id: number };
    const pending = alice()('/user');
    await sandbox.state.holds.reached(id);
    expect((await control(`/holds/${id}`)).json).toEqual({
      id,
      method: 'GET',
      path: '/user$',
      after: 0,
      times: 1,
      held: 1,
      waiting: 1,
    });
    // Not answered while held: the log has nothing yet.
    expect(await log()).toEqual([]);
    expect((await control(`/holds/${id}`, 'DELETE')).status).toBe(204);
    expect((await pending).status).toBe(200);
    expect((await log()).map((entry) => entry.path)).toEqual(['/api/v4/user']);
    expect((await control(`/holds/${id}`)).status).toBe(404);
    expect((await control('/holds', 'POST', { path: '(' })).status).toBe(400);
  });

  it('lists and removes fault rules, and validates them', async () => {
    const added = await control('/faults', 'POST', { status: 503 });
    expect(added.status).toBe(201);
    const id = (added.json as { id: number }).id;
    expect((await control('/faults')).json).toMatchObject([{ id, status: 503 }]);
    expect((await control(`/faults/${id}`, 'DELETE')).status).toBe(204);
    expect((await alice()('/user')).status).toBe(200);
    expect((await control('/faults', 'POST', { status: 200 })).status).toBe(400);
    expect((await control('/faults', 'POST', { path: '(' })).status).toBe(400);
  });

  it('moves the clock, changes settings, moves jobs and dumps the state', async () => {
    await control('/clock', 'POST', { now: '2025-01-01T00:00:00Z' });
    const advanced = await control('/clock', 'POST', { advance: '1d' });
    expect(new Date((advanced.json as { now: string }).now).getTime()).toBeGreaterThanOrEqual(
      Date.parse('2025-01-02T00:00:00Z'),
    );
    expect((await control('/clock', 'POST', { advance: 'soon' })).status).toBe(400);

    expect((await control('/settings', 'POST', { bulk_delete_delay_ms: 5, bulk_delete_cap: 3 })).json).toMatchObject({
      bulk_delete_delay_ms: 5,
      bulk_delete_cap: 3,
    });
    expect(sandbox.state.settings).toMatchObject({ bulkDeleteDelayMs: 5, bulkDeleteCap: 3 });

    const running = await control('/jobs/5', 'POST', { status: 'running', append_log: 'hello\n' });
    const token = (running.json as { token: string }).token;
    expect((await call(sandbox.url, '/api/v4/job', { headers: { 'JOB-TOKEN': token } })).json).toMatchObject({ id: 5 });
    await control('/jobs/5', 'POST', { status: 'failed', append_log: 'connection reset by peer\n' });
    expect((await alice()('/projects/1/jobs/5/trace')).text).toBe('hello\nconnection reset by peer\n');

    const dump = (await control('/state')).json as {
      jobs: { id: number; status: string }[];
      users: Record<string, unknown>[];
    };
    expect(dump.jobs).toMatchObject([{ id: 5, status: 'failed' }]);
    expect(dump.users[0]).not.toHaveProperty('tokens');
  });
});

/**
 * Faults that answer after the forge acted (`after: true`): the state changes although the client sees a 502 or a cut
 * connection, and the request log says what the forge did.
 */
describe('sandbox forge: faults after the forge acted', () => {
  const faultsLogged = async (): Promise<[string, number, string | null][]> =>
    (await log()).map((e) => [e.method, e.status, e.fault]);
  const attemptsOfTest = (): number => [...sandbox.state.jobs.values()].filter((j) => j.name === 'test').length;

  beforeEach(async () => {
    sandbox = await startSandbox({
      world: baseWorld({
        projects: [
          aProject('api', {
            id: 1,
            pipelines: [{ id: 7, jobs: [{ id: 5, name: 'test', status: 'failed', log: 'connection reset\n' }] }],
          }),
        ],
      }),
    });
  });
  afterEach(() => sandbox.close());

  it('retries the job, then answers 502 as a proxy that lost the answer would', async () => {
    await control('/faults', 'POST', { method: 'POST', path: '/retry$', status: 502, after: true, times: 1 });
    const answer = await alice()('/projects/1/jobs/5/retry', { method: 'POST' });
    expect(answer.status).toBe(502);
    expect(answer.text).toBe('502 Bad Gateway\n');
    expect(sandbox.state.jobs.get(5)?.retried).toBe(true);
    expect(attemptsOfTest()).toBe(2);
    expect(await faultsLogged()).toEqual([['POST', 502, 'status 502 after 200']]);
  });

  it('retries the job, then cuts the connection without an answer', async () => {
    await control('/faults', 'POST', { method: 'POST', sequence: [{ reset: true, after: true }] });
    await expect(
      request(`${sandbox.url}/api/v4/projects/1/jobs/5/retry`, {
        method: 'POST',
        headers: { 'PRIVATE-TOKEN': USER_TOKEN },
      }),
    ).rejects.toThrow();
    expect(attemptsOfTest()).toBe(2);
    expect(await faultsLogged()).toEqual([['POST', 0, 'reset after 200']]);
  });

  it('logs the forge’s own refusal behind the fault', async () => {
    await control('/faults', 'POST', { method: 'POST', status: 504, after: true });
    expect((await alice()('/projects/1/jobs/999/retry', { method: 'POST' })).status).toBe(504);
    expect(attemptsOfTest()).toBe(1);
    expect(await faultsLogged()).toEqual([['POST', 504, 'status 504 after 404']]);
  });

  it('still answers before acting without `after`', async () => {
    await control('/faults', 'POST', { method: 'POST', status: 502, times: 1 });
    expect((await alice()('/projects/1/jobs/5/retry', { method: 'POST' })).status).toBe(502);
    expect(sandbox.state.jobs.get(5)?.retried).toBe(false);
    expect(attemptsOfTest()).toBe(1);
    expect(await faultsLogged()).toEqual([['POST', 502, 'status 502']]);
  });
});
