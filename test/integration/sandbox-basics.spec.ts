import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { apiClient, call } from '../support/sandbox-http';
import { ADMIN_TOKEN, aProject, baseWorld, manyTags, OUTSIDER_TOKEN, USER_TOKEN } from '../support/world-builders';

describe('sandbox forge: pagination, ids and error shapes', () => {
  let sandbox: RunningSandbox;

  beforeAll(async () => {
    sandbox = await startSandbox({
      world: baseWorld({
        projects: [
          aProject('api', {
            id: 1,
            registry: [
              { id: 1, tags: manyTags(45) },
              { id: 2, name: 'huge', tags: manyTags(10_001, { stepMs: 1000 }) },
              { id: 3, name: 'exact', tags: manyTags(10_000, { stepMs: 1000 }) },
            ],
          }),
          aProject('web', { id: 2 }),
        ],
      }),
    });
  });
  afterAll(() => sandbox.close());

  const admin = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, ADMIN_TOKEN);

  it('pages through a list with X-* headers and a Link header', async () => {
    const names: string[] = [];
    let path: string | undefined = '/projects/1/registry/repositories/1/tags?per_page=20';
    const pages: Record<string, string | null>[] = [];
    while (path) {
      const response = await admin()(path);
      expect(response.status).toBe(200);
      names.push(...(response.json as { name: string }[]).map((t) => t.name));
      pages.push({
        page: response.headers.get('x-page'),
        next: response.headers.get('x-next-page'),
        prev: response.headers.get('x-prev-page'),
        total: response.headers.get('x-total'),
        totalPages: response.headers.get('x-total-pages'),
      });
      const next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '');
      path = next ? next[1].replace(`${sandbox.url}/api/v4`, '') : undefined;
    }
    expect(names).toEqual(manyTags(45).map((t) => t.name));
    expect(pages).toEqual([
      { page: '1', next: '2', prev: '', total: '45', totalPages: '3' },
      { page: '2', next: '3', prev: '1', total: '45', totalPages: '3' },
      { page: '3', next: '', prev: '2', total: '45', totalPages: '3' },
    ]);
  });

  it('links prev, next, first and last with page and per_page', async () => {
    const response = await admin()('/projects/1/registry/repositories/1/tags?per_page=10&page=2');
    const link = response.headers.get('link') ?? '';
    const rels = Object.fromEntries(
      [...link.matchAll(/<([^>]+)>; rel="(\w+)"/g)].map((m) => [m[2], new URL(m[1]).searchParams.get('page')]),
    );
    expect(rels).toEqual({ prev: '1', next: '3', first: '1', last: '5' });
    expect(response.headers.get('x-per-page')).toBe('10');
  });

  it('caps per_page at 100 and defaults it to 20', async () => {
    const big = await admin()('/projects/1/registry/repositories/2/tags?per_page=500');
    expect((big.json as unknown[]).length).toBe(100);
    expect(big.headers.get('x-per-page')).toBe('100');
    const plain = await admin()('/projects/1/registry/repositories/1/tags');
    expect((plain.json as unknown[]).length).toBe(20);
  });

  it('omits the totals and rel="last" above 10,000 records, but keeps next', async () => {
    const response = await admin()('/projects/1/registry/repositories/2/tags?per_page=100&page=3');
    expect(response.headers.get('x-total')).toBeNull();
    expect(response.headers.get('x-total-pages')).toBeNull();
    expect(response.headers.get('x-next-page')).toBe('4');
    expect(response.headers.get('link')).toContain('rel="next"');
    expect(response.headers.get('link')).not.toContain('rel="last"');
    const last = await admin()('/projects/1/registry/repositories/2/tags?per_page=100&page=101');
    expect((last.json as unknown[]).length).toBe(1);
    expect(last.headers.get('x-next-page')).toBe('');
  });

  it('still counts exactly 10,000 records', async () => {
    const response = await admin()('/projects/1/registry/repositories/3/tags?per_page=100');
    expect(response.headers.get('x-total')).toBe('10000');
    expect(response.headers.get('x-total-pages')).toBe('100');
  });

  it('accepts a URL-encoded full path wherever an id is', async () => {
    const byPath = await admin()('/projects/acme%2Fapi/registry/repositories');
    const byId = await admin()('/projects/1/registry/repositories');
    expect(byPath.status).toBe(200);
    expect(byPath.json).toEqual(byId.json);
    const group = await admin()('/groups/acme/registry/repositories?tags_count=true');
    expect((group.json as { tags_count: number }[]).map((r) => r.tags_count)).toEqual([45, 10_001, 10_000]);
    const namespace = await admin()('/namespaces/acme');
    expect(namespace.json).toMatchObject({ id: 10, kind: 'group', full_path: 'acme' });
  });

  it('authenticates with PRIVATE-TOKEN, Bearer, private_token and access_token, answers 401 otherwise and 403 to a blocked user’s token', async () => {
    const privateToken = await apiClient(sandbox.url, USER_TOKEN)('/user');
    const header = await call(sandbox.url, '/api/v4/user', { headers: { Authorization: `Bearer ${USER_TOKEN}` } });
    const query = await call(sandbox.url, `/api/v4/user?private_token=${USER_TOKEN}`);
    const accessToken = await call(sandbox.url, `/api/v4/user?access_token=${USER_TOKEN}`);
    expect([privateToken.status, header.status, query.status, accessToken.status]).toEqual([200, 200, 200, 200]);
    expect((query.json as { username: string }).username).toBe('alice');

    for (const token of [undefined, 'glpat-wrong']) {
      const response = await apiClient(sandbox.url, token)('/projects/1/jobs');
      expect(response.status).toBe(401);
      expect(response.json).toEqual({ message: '401 Unauthorized' });
    }

    // As on the forge (`find_current_user!`), a blocked account's tokens stop working at once, with the reason; the others' go on.
    const outsider = sandbox.state.users.get(sandbox.state.accessTokens.byTokenValue(OUTSIDER_TOKEN)!.user_id)!;
    outsider.state = 'blocked';
    try {
      expect(await apiClient(sandbox.url, OUTSIDER_TOKEN)('/user')).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden - Your account has been blocked.' },
      });
      expect((await apiClient(sandbox.url, USER_TOKEN)('/user')).status).toBe(200);
    } finally {
      outsider.state = 'active';
    }
  });

  it('answers 404 with the forge bodies for unknown or invisible resources', async () => {
    const unknown = await admin()('/projects/999/jobs');
    expect(unknown).toMatchObject({ status: 404, json: { message: '404 Project Not Found' } });
    // A private project the caller is not a member of does not exist for them.
    const invisible = await apiClient(sandbox.url, OUTSIDER_TOKEN)('/projects/acme%2Fapi/jobs');
    expect(invisible).toMatchObject({ status: 404, json: { message: '404 Project Not Found' } });
    const job = await admin()('/projects/1/jobs/424242');
    expect(job).toMatchObject({ status: 404, json: { message: '404 Not found' } });
    const route = await admin()('/no/such/route');
    expect(route).toMatchObject({ status: 404, json: { error: '404 Not Found' } });
    const user = await admin()('/users/999');
    expect(user).toMatchObject({ status: 404, json: { message: '404 User Not Found' } });
  });

  it('answers 403 for admin-only endpoints and too low a role', async () => {
    const user = apiClient(sandbox.url, USER_TOKEN);
    expect(await user('/deploy_keys')).toMatchObject({ status: 403, json: { message: '403 Forbidden' } });
    // alice is a developer: deleting a registry repository needs a maintainer.
    const deletion = await user('/projects/1/registry/repositories/1', { method: 'DELETE' });
    expect(deletion).toMatchObject({ status: 403, json: { message: '403 Forbidden' } });
    expect(sandbox.state.repositories.get(1)?.status).toBeNull();
  });

  it('answers parameter errors as {"error": ...}', async () => {
    const response = await admin()('/projects/1/jobs?scope=exploded');
    expect(response).toMatchObject({ status: 400, json: { error: 'scope does not have a valid value' } });
    const id = await admin()('/projects/1/jobs/abc');
    expect(id).toMatchObject({ status: 400, json: { error: 'job_id is invalid' } });
  });
});
