import { BULK_DELETE_LIMIT_MESSAGE, startSandbox, type RunningSandbox } from '../../src/sandbox';
import { apiClient, call } from '../support/sandbox-http';
import { aProject, BASE_NOW, baseWorld, MAINTAINER_TOKEN, manyTags } from '../support/world-builders';

const DAY = 24 * 3600 * 1000;
const ago = (days: number): string => new Date(Date.parse(BASE_NOW) - days * DAY).toISOString();

describe('sandbox forge: container registry', () => {
  let sandbox: RunningSandbox;
  const maintainer = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, MAINTAINER_TOKEN);
  const tagNames = (repositoryId: number): string[] => sandbox.state.tags(repositoryId).map((t) => t.name);

  beforeEach(async () => {
    sandbox = await startSandbox({
      bulkDeleteDelayMs: 30,
      world: baseWorld({
        projects: [
          aProject('api', {
            id: 1,
            registry: [
              {
                id: 1,
                tags: [
                  { name: 'latest', created_at: ago(0) },
                  { name: 'main', created_at: ago(1) },
                  { name: 'v1.2.3', created_at: ago(10) },
                  { name: 'build-1', created_at: ago(40) },
                  { name: 'build-2', created_at: ago(20) },
                  { name: 'build-3', created_at: ago(2) },
                  { name: 'nightly', created_at: null },
                ],
              },
              { id: 2, name: 'bulk', tags: manyTags(2000) },
            ],
          }),
          aProject('web', { id: 2 }),
        ],
      }),
    });
  });
  afterEach(() => sandbox.close());

  const bulkDelete = (query: string): ReturnType<ReturnType<typeof apiClient>> =>
    maintainer()(`/projects/acme%2Fapi/registry/repositories/1/tags?${query}`, { method: 'DELETE' });

  it('lists repositories with tags and tags_count on request', async () => {
    const plain = await maintainer()('/projects/1/registry/repositories');
    expect((plain.json as Record<string, unknown>[])[0]).not.toHaveProperty('tags');
    const rich = await maintainer()('/projects/1/registry/repositories?tags=true&tags_count=true');
    expect((rich.json as Record<string, unknown>[])[0]).toMatchObject({
      id: 1,
      path: 'acme/api',
      location: 'registry.sandbox.test/acme/api',
      tags_count: 7,
      tags: expect.arrayContaining([
        { name: 'v1.2.3', path: 'acme/api:v1.2.3', location: 'registry.sandbox.test/acme/api:v1.2.3' },
      ]),
    });
    const detail = await maintainer()('/registry/repositories/2?tags_count=true');
    expect(detail.json).toMatchObject({ id: 2, name: 'bulk', path: 'acme/api/bulk', tags_count: 2000 });
  });

  it('shows tag detail, created_at null for a tag without timestamp', async () => {
    const tag = await maintainer()('/projects/1/registry/repositories/1/tags/v1.2.3');
    expect(tag.json).toMatchObject({
      name: 'v1.2.3',
      created_at: ago(10),
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    const nightly = await maintainer()('/projects/1/registry/repositories/1/tags/nightly');
    expect(nightly.json).toMatchObject({ name: 'nightly', created_at: null });
    const missing = await maintainer()('/projects/1/registry/repositories/1/tags/nope');
    expect(missing).toMatchObject({ status: 404, json: { message: '404 Tag Not Found' } });
  });

  it('deletes one tag', async () => {
    const response = await maintainer()('/projects/1/registry/repositories/1/tags/build-1', { method: 'DELETE' });
    expect(response.status).toBe(200);
    expect(tagNames(1)).not.toContain('build-1');
  });

  it('deletes a repository asynchronously: 202, then gone after the delay', async () => {
    // Long enough for the second request to come first on a loaded machine; whenIdle() then waits it out.
    sandbox.state.settings.bulkDeleteDelayMs = 2_000;
    const response = await maintainer()('/projects/1/registry/repositories/2', { method: 'DELETE' });
    expect(response.status).toBe(202);
    expect((await maintainer()('/registry/repositories/2')).json).toMatchObject({ status: 'delete_scheduled' });
    await sandbox.state.whenIdle();
    expect((await maintainer()('/registry/repositories/2')).status).toBe(404);
  });

  it('bulk delete answers 202 and applies the rules after the delay', async () => {
    const response = await bulkDelete('name_regex_delete=.*&name_regex_keep=v.*&keep_n=1');
    expect(response.status).toBe(202);
    expect(response.text).toBe('');
    expect(tagNames(1)).toHaveLength(7);
    await sandbox.state.whenIdle();
    // latest never goes; v1.2.3 is kept; keep_n keeps the newest candidate, `nightly` (no timestamp counts as newest).
    expect(tagNames(1)).toEqual(['latest', 'nightly', 'v1.2.3']);
    expect(sandbox.state.bulkDeletions[0]).toMatchObject({
      repository_id: 1,
      deleted: ['build-1', 'build-2', 'build-3', 'main'],
    });
  });

  it('bulk delete with older_than keeps recent tags and those without timestamp; name_regex works as synonym', async () => {
    expect((await bulkDelete('name_regex=.*&older_than=7d')).status).toBe(202);
    await sandbox.state.whenIdle();
    expect(tagNames(1)).toEqual(['build-3', 'latest', 'main', 'nightly']);
  });

  it('accepts the parameters as a JSON body too', async () => {
    const response = await maintainer()('/projects/1/registry/repositories/1/tags', {
      method: 'DELETE',
      body: { name_regex_delete: 'build-.*', keep_n: 2 },
    });
    expect(response.status).toBe(202);
    await sandbox.state.whenIdle();
    expect(tagNames(1)).toEqual(['build-2', 'build-3', 'latest', 'main', 'nightly', 'v1.2.3']);
  });

  it('refuses a second bulk delete within the hour with 400 and the exact message, until the clock moves an hour', async () => {
    expect((await bulkDelete('name_regex_delete=build-1')).status).toBe(202);
    const second = await bulkDelete('name_regex_delete=build-2');
    expect(second.status).toBe(400);
    expect(second.json).toEqual({ message: BULK_DELETE_LIMIT_MESSAGE });
    expect(second.json).toEqual({
      message:
        'This request has already been made. You can run this at most once an hour for a given container repository',
    });
    expect(second.headers.get('retry-after')).toBeNull();

    // Another repository has its own limit.
    expect(
      (await maintainer()('/projects/1/registry/repositories/2/tags?name_regex_delete=x', { method: 'DELETE' })).status,
    ).toBe(202);

    await call(sandbox.url, '/__sandbox/clock', { method: 'POST', body: { advance: '59m' } });
    expect((await bulkDelete('name_regex_delete=build-2')).status).toBe(400);
    await call(sandbox.url, '/__sandbox/clock', { method: 'POST', body: { advance_seconds: 61 } });
    expect((await bulkDelete('name_regex_delete=build-2')).status).toBe(202);
    await sandbox.state.whenIdle();
    expect(tagNames(1)).not.toEqual(expect.arrayContaining(['build-1']));
    expect(tagNames(1)).not.toEqual(expect.arrayContaining(['build-2']));
  });

  it('rejects an invalid regex with 400 before taking the hourly slot', async () => {
    const response = await bulkDelete('name_regex_delete=(');
    expect(response.status).toBe(400);
    expect(response.json).toEqual({ error: expect.stringMatching(/^name_regex_delete is an invalid regexp: /) });
    const keep = await bulkDelete('name_regex_delete=.*&name_regex_keep=a(?=b)');
    expect(keep.json).toEqual({ error: expect.stringMatching(/^name_regex_keep is an invalid regexp/) });
    const missing = await bulkDelete('keep_n=1');
    expect(missing.json).toEqual({
      error: 'name_regex, name_regex_delete are missing, at least one parameter must be provided',
    });
    expect((await bulkDelete('name_regex_delete=.*')).status).toBe(202);
  });

  it('with the per-call cap on, deletes only the first N tags per call', async () => {
    await call(sandbox.url, '/__sandbox/settings', { method: 'POST', body: { bulk_delete_cap: 500 } });
    const repo = '/projects/1/registry/repositories/2/tags?name_regex_delete=.*';
    expect((await maintainer()(repo, { method: 'DELETE' })).status).toBe(202);
    await sandbox.state.whenIdle();
    expect(tagNames(2)).toHaveLength(1500);
    // The oldest go first.
    expect(tagNames(2)[0]).toBe('build-0500');

    await call(sandbox.url, '/__sandbox/clock', { method: 'POST', body: { advance: '1h' } });
    await maintainer()(repo, { method: 'DELETE' });
    await call(sandbox.url, '/__sandbox/settings', { method: 'POST', body: { bulk_delete_cap: null } });
    await call(sandbox.url, '/__sandbox/clock', { method: 'POST', body: { advance: '1h' } });
    await maintainer()(repo, { method: 'DELETE' });
    await sandbox.state.whenIdle();
    expect(tagNames(2)).toHaveLength(0);
  });

  it('lists the 2,000 tags in pages of 100', async () => {
    const first = await maintainer()('/projects/1/registry/repositories/2/tags?per_page=100&page=20');
    expect(first.headers.get('x-total')).toBe('2000');
    expect((first.json as { name: string }[]).at(-1)?.name).toBe('build-1999');
  });
});
