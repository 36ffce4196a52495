import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { request } from 'undici';
import { type World } from '../../src/sandbox';
import {
  acmeGroup,
  ADMIN_TOKEN,
  apiProject,
  BASE_NOW,
  baseWorld,
  MAINTAINER_TOKEN,
  manyJobs,
  manyTags,
  OUTSIDER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';
import { generateEd25519PublicKey } from '../../src/sandbox/ssh-key';
import {
  BulkDeleteAlreadyRequestedError,
  ForbiddenError,
  type GitlabClientOptions,
  isAdminView,
  type Job,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
  ValidationError,
} from '../../src/gitlab';
import { DEFAULT_RETRY_OPTIONS } from '../../src/gitlab/transport/retry';
import { FakeClock } from '../support/gitlab/fake-clock';
import { collect, useSandboxClients } from '../support/sandbox-clients';

/**
 * The client against the sandbox over real HTTP: every resource method, pagination across pages, path-encoded ids,
 * the error shapes the forge answers with, and injected faults. Retries sleep on a fake clock, so no test waits.
 */

const JOB_TOKEN = 'glcbt-running-job-token';
const PIPELINE = 500;
const CHILD_PIPELINE = 501;
const MANUAL_JOB = 9001;
const RUNNING_JOB = 9002;
const FAILED_JOB = 9003;
const LOGLESS_JOB = 9004;
const REPO = 70;

function world(): World {
  return baseWorld({
    groups: [
      acmeGroup({
        members: [
          { user: 'mia', access_level: 'owner' },
          { user: 'alice', access_level: 'developer' },
        ],
        access_requests: [{ user: 'olaf' }],
      }),
    ],
    projects: [
      apiProject({
        visibility: 'internal', // so an outsider can see it and request access
        allowed_agents: [{ id: 7, config_project: 'acme/web' }],
        pipelines: [
          {
            id: PIPELINE,
            ref: 'main',
            user: 'alice',
            jobs: [
              ...manyJobs(230).map((job, i) => ({ ...job, id: 1000 + i })),
              { id: MANUAL_JOB, name: 'deploy', stage: 'deploy', status: 'manual' as const },
              { id: RUNNING_JOB, name: 'e2e', status: 'running' as const, token: JOB_TOKEN, log: 'running\n' },
              {
                id: FAILED_JOB,
                name: 'test-flaky',
                status: 'failed' as const,
                log: `${'x'.repeat(5000)}\nERROR: connection reset by peer\n`,
              },
              { id: LOGLESS_JOB, name: 'lint', status: 'failed' as const, log: null },
              { id: 9005, name: 'test-flaky', status: 'failed' as const, retried: true, log: 'old\n' },
            ],
            bridges: [{ id: 9100, name: 'trigger-child', downstream_pipeline: CHILD_PIPELINE }],
          },
          { id: CHILD_PIPELINE, ref: 'main', parent_pipeline: PIPELINE, jobs: [{ id: 9200, name: 'child-job' }] },
        ],
        registry: [
          { id: REPO, name: '', tags: [...manyTags(12), { name: 'latest', created_at: BASE_NOW }] },
          { id: REPO + 1, name: 'tools', tags: manyTags(3, { prefix: 'tool-' }) },
        ],
      }),
      webProject({ access_requests: [{ user: 'olaf' }] }),
    ],
    deploy_keys: [
      {
        id: 40,
        title: 'release-2024',
        key: generateEd25519PublicKey('release'),
        projects: [{ project: 'acme/api', can_push: false }],
      },
    ],
  });
}

describe('GitlabClient against the sandbox', () => {
  // The client's own retries: the error tests below are about them, on the fake clock.
  const forge = useSandboxClients(world, {
    sandbox: { bulkDeleteDelayMs: 0 },
    clients: { retry: DEFAULT_RETRY_OPTIONS },
  });
  const client = (token = ADMIN_TOKEN, options: Partial<GitlabClientOptions> = {}) => forge.client(token, options);

  async function control(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    const response = await request(`${forge.sandbox.url}/__sandbox${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.body.text();
    if (response.statusCode >= 400) throw new Error(`control ${path}: ${response.statusCode} ${text}`);
    return text ? (JSON.parse(text) as unknown) : undefined;
  }

  type Logged = { method: string; path: string; query: Record<string, string | string[]>; status: number };
  const requests = async (): Promise<Logged[]> => (await control('GET', '/requests')) as Logged[];

  describe('jobs', () => {
    it('streams every project job over several pages, newest first, by URL-encoded path', async () => {
      const jobs = await collect(client().jobs.all('acme/api'));
      expect(jobs.length).toBe(230 + 5 + 1); // the pipeline's jobs incl. the retried one, and the child's
      expect(jobs.map((j) => j.id)).toEqual([...jobs.map((j) => j.id)].sort((a, b) => b - a));
      const log = await requests();
      expect(log.map((r) => r.path)).toEqual(Array(3).fill('/api/v4/projects/acme%2Fapi/jobs'));
      expect(log.map((r) => r.query.per_page)).toEqual(['100', '100', '100']);
    });

    it('filters by scope (array form) and stops early with `until`', async () => {
      const failed = await collect(client().jobs.all(1, { scope: ['failed', 'manual'] }));
      expect(new Set(failed.map((j) => j.status))).toEqual(new Set(['failed', 'manual']));
      expect((await requests())[0].query['scope[]']).toEqual(['failed', 'manual']);

      const c = client();
      const newest = await collect(c.jobs.all(1, {}, { until: (j: Job) => j.id <= MANUAL_JOB }));
      expect(newest.map((j) => j.id)).toEqual([9200, 9005, LOGLESS_JOB, FAILED_JOB, RUNNING_JOB]);
    });

    it('lists pipeline jobs with child pipelines, retried ones only on request, and bridges', async () => {
      const c = client();
      const jobs = await collect(c.jobs.allForPipeline('acme/api', PIPELINE, { scope: 'failed' }));
      expect(jobs.map((j) => j.id)).not.toContain(9005);
      const withRetried = await collect(
        c.jobs.allForPipeline('acme/api', PIPELINE, { scope: ['failed'], include_retried: true }),
      );
      expect(withRetried.map((j) => j.id)).toContain(9005);
      expect(withRetried.length).toBe(jobs.length + 1);
      const all = await collect(c.jobs.allForPipeline(1, PIPELINE));
      expect(all.map((j) => j.id)).toContain(9200);

      const bridges = await collect(c.jobs.allBridges(1, PIPELINE));
      expect(bridges).toHaveLength(1);
      expect(bridges[0]).toMatchObject({ id: 9100, downstream_pipeline: { id: CHILD_PIPELINE } });
    });

    it('finds the job of a job token and its allowed agents (JOB-TOKEN)', async () => {
      const job = await client().jobs.current(JOB_TOKEN);
      expect(job.id).toBe(RUNNING_JOB);
      const viaTokenKind = await client(JOB_TOKEN, { tokenKind: 'job' }).jobs.allowedAgents();
      expect(viaTokenKind.job.id).toBe(RUNNING_JOB);
      expect(viaTokenKind.allowed_agents.map((a) => a.id)).toEqual([7]);
      expect(viaTokenKind.allowed_agents[0].config_project.path_with_namespace).toBe('acme/web');
    });

    it('shows a job, reads its log whole and its tail, and reports a missing log as gone', async () => {
      const c = client();
      const job = await c.jobs.show('acme/api', FAILED_JOB);
      expect(job).toMatchObject({ id: FAILED_JOB, status: 'failed', name: 'test-flaky' });
      const log = await c.jobs.trace(1, FAILED_JOB);
      expect(log.endsWith('ERROR: connection reset by peer\n')).toBe(true);
      const tail = await c.jobs.traceTail('acme/api', FAILED_JOB, 40);
      expect(tail).toEqual({
        found: true,
        text: log.slice(-40),
        truncated: true,
        totalBytes: Buffer.byteLength(log),
      });
      expect(await c.jobs.traceTail(1, LOGLESS_JOB, 40)).toEqual({ found: false });
      expect(await c.jobs.traceTail(1, 424242, 40)).toEqual({ found: false });
    });

    it('retries, cancels, plays and erases jobs', async () => {
      const c = client(MAINTAINER_TOKEN);
      const retried = await c.jobs.retry('acme/api', FAILED_JOB);
      expect(retried.status).toBe('pending');
      expect(retried.id).not.toBe(FAILED_JOB);
      expect(retried.name).toBe('test-flaky');

      const canceled = await c.jobs.cancel(1, RUNNING_JOB);
      expect(canceled).toMatchObject({ id: RUNNING_JOB, status: 'canceled' });

      const played = await c.jobs.play(1, MANUAL_JOB);
      expect(played.status).toBe('pending');

      const erased = await c.jobs.erase(1, 1001);
      expect(erased.id).toBe(1001);
      expect(await c.jobs.traceTail(1, 1001, 100)).toEqual({ found: false });

      const writes = (await requests()).filter((r) => r.method === 'POST').map((r) => r.path);
      expect(writes).toEqual([
        `/api/v4/projects/acme%2Fapi/jobs/${FAILED_JOB}/retry`,
        `/api/v4/projects/1/jobs/${RUNNING_JOB}/cancel`,
        `/api/v4/projects/1/jobs/${MANUAL_JOB}/play`,
        '/api/v4/projects/1/jobs/1001/erase',
      ]);
    });

    it('raises NotFoundError for an unknown job', async () => {
      const error = await client()
        .jobs.show('acme/api', 424242)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error).toMatchObject({ status: 404, method: 'GET', path: 'projects/acme%2Fapi/jobs/424242' });
    });
  });

  describe('container registry', () => {
    it('lists project and group repositories with tags and counts, and shows one', async () => {
      const c = client();
      const repos = await collect(c.registry.all('acme/api', { tags: true, tags_count: true }));
      expect(repos.map((r) => r.id).sort()).toEqual([REPO, REPO + 1]);
      const root = repos.find((r) => r.id === REPO);
      expect(root?.tags_count).toBe(13);
      expect(root?.tags?.map((t) => t.name)).toContain('latest');

      const group = await collect(c.registry.allForGroup('acme', { tags_count: true }));
      expect(group.map((r) => r.id).sort()).toEqual([REPO, REPO + 1]);
      expect(group[0].tags).toBeUndefined();

      const shown = await c.registry.show(REPO, { tags_count: true });
      expect(shown).toMatchObject({ id: REPO, project_id: 1, tags_count: 13 });
    });

    it('lists, shows and deletes tags', async () => {
      const c = client(MAINTAINER_TOKEN);
      const tags = await collect(c.registry.allTags('acme/api', REPO));
      expect(tags).toHaveLength(13);
      const tag = await c.registry.showTag('acme/api', REPO, 'build-05');
      expect(tag).toMatchObject({ name: 'build-05', digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
      await c.registry.removeTag('acme/api', REPO, 'build-05');
      await expect(c.registry.showTag('acme/api', REPO, 'build-05')).rejects.toBeInstanceOf(NotFoundError);
    });

    it('bulk-deletes with every parameter, and maps the once-an-hour refusal to its own error', async () => {
      const c = client(MAINTAINER_TOKEN);
      await c.registry.removeTags('acme/api', REPO, {
        name_regex_delete: 'build-.*',
        name_regex_keep: 'build-0[0-1]',
        keep_n: 3,
        older_than: '1d',
      });
      await control('GET', '/idle');
      const left = (await collect(c.registry.allTags(1, REPO))).map((t) => t.name).sort();
      expect(left).toEqual(['build-00', 'build-01', 'build-09', 'build-10', 'build-11', 'latest']);
      const logged = (await requests()).find((r) => r.method === 'DELETE');
      expect(logged?.query).toMatchObject({
        name_regex_delete: 'build-.*',
        name_regex_keep: 'build-0[0-1]',
        keep_n: '3',
        older_than: '1d',
      });

      const again = await c.registry.removeTags(1, REPO, { name_regex_delete: '.*' }).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(BulkDeleteAlreadyRequestedError);
      expect(again).toBeInstanceOf(ValidationError);
      expect((again as ValidationError).status).toBe(400);

      await c.registry.removeTags(1, REPO + 1, { name_regex_delete: 'tool-.*', name_regex: 'tool-.*' });
      await control('GET', '/idle');
      expect(await collect(c.registry.allTags(1, REPO + 1))).toEqual([]);
    });

    it('deletes a repository', async () => {
      const c = client(MAINTAINER_TOKEN);
      await c.registry.remove('acme/api', REPO + 1);
      await control('GET', '/idle');
      await expect(c.registry.show(REPO + 1)).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe('namespaces', () => {
    it('lists with search, shows by path and checks existence', async () => {
      const c = client();
      const found = await collect(c.namespaces.all({ search: 'acm' }));
      expect(found.map((n) => n.full_path)).toEqual(['acme']);
      const ns = await c.namespaces.show('acme');
      expect(ns).toMatchObject({ id: 10, kind: 'group', full_path: 'acme', parent_id: null });
      const user = await c.namespaces.show('alice');
      expect(user.kind).toBe('user');
      expect(await c.namespaces.exists('acme')).toMatchObject({ exists: true });
      expect(await c.namespaces.exists('brand-new', { parent_id: 10 })).toMatchObject({ exists: false });
    });
  });

  describe('users', () => {
    it('gives administrators the admin view and others the summary', async () => {
      const asAdmin = await collect(client().users.all({ order_by: 'username', sort: 'asc' }));
      expect(asAdmin.map((u) => u.username)).toEqual(['alice', 'mia', 'olaf', 'root']);
      expect(asAdmin.every((u) => isAdminView(u))).toBe(true);

      const asUser = await collect(client(USER_TOKEN).users.all({ username: 'MIA' }));
      expect(asUser.map((u) => u.username)).toEqual(['mia']);
      expect(isAdminView(asUser[0])).toBe(false);

      const admins = await collect(client().users.all({ admins: true, exclude_external: true, active: true }));
      expect(admins.map((u) => u.username)).toEqual(['root']);
    });

    it('shows a user and the current user', async () => {
      const shown = await client(USER_TOKEN).users.show(2);
      expect(shown).toMatchObject({ id: 2, username: 'mia' });
      expect(isAdminView(shown)).toBe(false);
      expect(isAdminView(await client().users.show(2))).toBe(true);

      const me = await client(USER_TOKEN).users.current();
      expect(me).toMatchObject({ id: 3, username: 'alice', email: 'alice@acme.test' });
      expect((await client().users.current({ sudo: 3 })).username).toBe('alice');
    });
  });

  describe('SSH keys', () => {
    it('adds, lists, shows and deletes the caller’s keys, with expiry', async () => {
      const c = client(USER_TOKEN);
      const created = await c.sshKeys.create({
        title: 'ci-deploy-1',
        key: generateEd25519PublicKey('ci'),
        expires_at: '2025-09-01T00:00:00.000Z',
      });
      expect(created).toMatchObject({ title: 'ci-deploy-1', expires_at: expect.stringMatching(/^2025-09-01/) });
      expect((await collect(c.sshKeys.all())).map((k) => k.id)).toEqual([created.id]);
      expect((await c.sshKeys.show(created.id)).title).toBe('ci-deploy-1');
      expect((await collect(client().sshKeys.allForUser('alice'))).map((k) => k.id)).toEqual([created.id]);
      await c.sshKeys.remove(created.id);
      await expect(c.sshKeys.show(created.id)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('manages another user’s keys as an administrator', async () => {
      const admin = client();
      const created = await admin.sshKeys.createForUser(4, { title: 'olaf-laptop', key: generateEd25519PublicKey() });
      expect((await collect(admin.sshKeys.allForUser(4))).map((k) => k.title)).toEqual(['olaf-laptop']);
      await admin.sshKeys.removeForUser(4, created.id);
      expect(await collect(admin.sshKeys.allForUser('olaf'))).toEqual([]);
    });

    it('reports a rejected key as a ValidationError with field messages', async () => {
      const c = client(USER_TOKEN);
      const key = generateEd25519PublicKey();
      await c.sshKeys.create({ title: 'one', key });
      const error = await c.sshKeys.create({ title: 'two', key }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect(Object.keys((error as ValidationError).fields).length).toBeGreaterThan(0);
      expect((error as ValidationError).message).toMatch(/^\w+: /);
    });
  });

  describe('deploy keys', () => {
    it('covers instance and project lists, create, edit, enable, show and delete', async () => {
      const admin = client();
      const instance = await collect(admin.deployKeys.allForInstance());
      expect(instance.map((k) => k.id)).toEqual([40]);
      expect(instance[0]).not.toHaveProperty('can_push');

      const c = client(MAINTAINER_TOKEN);
      expect((await collect(c.deployKeys.all('acme/api'))).map((k) => k.title)).toEqual(['release-2024']);
      const created = await c.deployKeys.create('acme/api', {
        title: 'release-2025',
        key: generateEd25519PublicKey(),
        can_push: true,
      });
      expect(created).toMatchObject({ title: 'release-2025', can_push: true });
      const edited = await c.deployKeys.edit('acme/api', created.id, { title: 'release-2025b', can_push: false });
      expect(edited).toMatchObject({ title: 'release-2025b', can_push: false });
      const enabled = await c.deployKeys.enable('acme/web', created.id);
      expect(enabled.id).toBe(created.id);
      expect((await c.deployKeys.show('acme/web', created.id)).title).toBe('release-2025b');
      await c.deployKeys.remove('acme/api', created.id);
      await expect(c.deployKeys.show('acme/api', created.id)).rejects.toBeInstanceOf(NotFoundError);
      expect((await c.deployKeys.show(2, created.id)).id).toBe(created.id);
    });
  });

  describe('access requests', () => {
    it('lists, approves with a level and denies for groups and projects', async () => {
      const owner = client(MAINTAINER_TOKEN);
      const pending = await collect(owner.groupAccessRequests.all('acme'));
      expect(pending.map((r) => r.username)).toEqual(['olaf']);
      const approved = await owner.groupAccessRequests.approve('acme', 4, { access_level: 20 });
      expect(approved).toMatchObject({ id: 4, username: 'olaf', access_level: 20 });
      expect(await collect(owner.groupAccessRequests.all('acme'))).toEqual([]);

      const projectPending = await collect(owner.projectAccessRequests.all('acme/web'));
      expect(projectPending.map((r) => r.id)).toEqual([4]);
      await owner.projectAccessRequests.deny('acme/web', 4);
      expect(await collect(owner.projectAccessRequests.all(2))).toEqual([]);
    });

    it('lets a caller request access', async () => {
      const c = client(OUTSIDER_TOKEN);
      const created = await c.projectAccessRequests.request('acme/api');
      expect(created).toMatchObject({ id: 4, username: 'olaf' });
      expect(created.requested_at).toBeDefined();
      const approved = await client(MAINTAINER_TOKEN).projectAccessRequests.approve(1, 4);
      expect(approved.access_level).toBe(30);
    });
  });

  describe('errors and faults', () => {
    it('raises UnauthorizedError for a bad token and ForbiddenError for a missing right', async () => {
      const bad = await client('glpat-wrong')
        .users.current()
        .catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(UnauthorizedError);
      expect((bad as UnauthorizedError).message).toBe('401 Unauthorized');
      const forbidden = await collect(client(USER_TOKEN).deployKeys.allForInstance()).catch((e: unknown) => e);
      expect(forbidden).toBeInstanceOf(ForbiddenError);
    });

    it('maps a parameter error ({error}) to ValidationError', async () => {
      const error = await client(MAINTAINER_TOKEN)
        .registry.removeTags(1, REPO, { name_regex_delete: '(' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).not.toBeInstanceOf(BulkDeleteAlreadyRequestedError);
    });

    it('retries a 429 (plain text, Retry-After) and 503s, then succeeds', async () => {
      await control('POST', '/faults', {
        path: '^/api/v4/namespaces/acme$',
        sequence: [{ status: 429, retry_after: 7 }, 503, 'pass'],
      });
      const clock = new FakeClock(Date.parse(BASE_NOW));
      const ns = await client(ADMIN_TOKEN, { clock }).namespaces.show('acme');
      expect(ns.id).toBe(10);
      expect(clock.sleeps[0]).toBe(7000);
      expect((await requests()).map((r) => r.status)).toEqual([429, 503, 200]);
    });

    it('falls back to RateLimit-Reset and gives up with RateLimitedError when attempts run out', async () => {
      await control('POST', '/faults', { path: '^/api/v4/user$', status: 429, ratelimit_reset_in: 20 });
      const clock = new FakeClock(Date.parse(BASE_NOW));
      const error = await client(ADMIN_TOKEN, { clock, retry: { maxAttempts: 2 } })
        .users.current()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitedError);
      expect((error as RateLimitedError).message).toBe('Retry later');
      expect(clock.sleeps[0]).toBeGreaterThanOrEqual(19_000);
      expect(clock.sleeps[0]).toBeLessThanOrEqual(20_000);
      expect(await requests()).toHaveLength(2);
    });

    it('maps a proxy’s HTML 502 to ServerError with a short message', async () => {
      await control('POST', '/faults', {
        path: '^/api/v4/namespaces',
        status: 502,
        body: '<html><head><title>502 Bad Gateway</title></head><body><center>nginx</center></body></html>',
      });
      const error = await client(ADMIN_TOKEN, { retry: { maxAttempts: 1 } })
        .namespaces.show(10)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ServerError);
      expect((error as ServerError).message).toBe('502 Bad Gateway');
    });

    it('retries a GET after a connection reset but never a POST', async () => {
      await control('POST', '/faults', { path: '^/api/v4/projects/1/jobs/', sequence: ['reset', 'pass'] });
      const c = client(MAINTAINER_TOKEN);
      expect((await c.jobs.show(1, FAILED_JOB)).id).toBe(FAILED_JOB);

      await control('DELETE', '/faults');
      await control('POST', '/faults', { method: 'POST', path: '/retry$', sequence: ['reset', 'pass'] });
      const error = await c.jobs.retry(1, FAILED_JOB).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NetworkError);
      expect((error as NetworkError).mayHaveReachedServer).toBe(true);
      const posts = (await requests()).filter((r) => r.method === 'POST');
      expect(posts).toHaveLength(1);
    });

    it('shares one request budget between two clients through Redis', async () => {
      const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
      const prefix = `test:gitlab-client:${randomUUID()}`;
      try {
        const clock = new FakeClock(Date.parse(BASE_NOW) + 10_000); // 50 s before the next minute window
        const shared = { clock, redis, redisPrefix: prefix, maxRequestsPerMinute: 3 };
        const a = client(ADMIN_TOKEN, shared);
        const b = client(USER_TOKEN, shared);
        await a.namespaces.show('acme');
        await b.namespaces.show('acme');
        await a.namespaces.show('acme');
        expect(clock.sleeps).toEqual([]);
        await b.users.current();
        expect(clock.sleeps).toEqual([50_000]);
        expect(await requests()).toHaveLength(4);
      } finally {
        const keys = await redis.keys(`${prefix}:*`);
        if (keys.length) await redis.del(...keys);
        await redis.quit();
      }
    });

    it('reports each attempt to onResponse with a low-cardinality route', async () => {
      await control('POST', '/faults', { path: '^/api/v4/namespaces/acme$', sequence: [503, 'pass'] });
      const events: Array<[string, string, number | string]> = [];
      await client(ADMIN_TOKEN, { onResponse: (e) => events.push([e.method, e.route, e.status]) }).namespaces.show(
        'acme',
      );
      expect(events).toEqual([
        ['GET', 'namespaces/:param', 503],
        ['GET', 'namespaces/:param', 200],
      ]);
    });
  });
});
