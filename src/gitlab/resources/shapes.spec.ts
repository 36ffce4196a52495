import type { GitlabClient } from '../client';
import { ApiError, UnexpectedAnswerError } from '../transport/errors';
import { MockForge } from '../../../test/support/gitlab/mock-forge';
import {
  aCurrentUser,
  aDeployKey,
  aJob,
  anAccessRequest,
  anSshKey,
  aRepository,
  aTag,
  aUser,
  jobs,
} from '../../../test/support/gitlab/records';

const P = '/api/v4';
const page = 'page=1&per_page=100';

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** `record` with `field` (dotted) set to `value`, or removed when `value` is `undefined`. */
function withField<T extends object>(record: T, field: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(record) as Record<string, unknown>;
  const names = field.split('.');
  let target = copy;
  for (const name of names.slice(0, -1)) target = target[name] as Record<string, unknown>;
  const last = names[names.length - 1];
  if (value === undefined) delete target[last];
  else target[last] = value;
  return copy;
}

type Case = {
  name: string;
  call: (c: GitlabClient) => Promise<unknown>;
  method: 'GET' | 'POST';
  path: string;
  reply: unknown;
  message: string;
  field: string;
  item?: number;
};

const cases: Case[] = [
  {
    name: 'jobs.all, a pipeline without project_id',
    call: (c) => collect(c.jobs.all(1, { scope: ['failed'] })),
    method: 'GET',
    path: `${P}/projects/1/jobs?scope%5B%5D=failed&${page}`,
    reply: [
      aJob({ id: 9 }),
      aJob({ id: 8 }),
      aJob({ id: 7 }),
      withField(aJob({ id: 6 }), 'pipeline.project_id', undefined),
    ],
    message: 'unexpected answer from GET projects/1/jobs: item 3: field pipeline.project_id missing',
    field: 'pipeline.project_id',
    item: 3,
  },
  {
    name: 'jobs.all, a mistyped pipeline project_id',
    call: (c) => collect(c.jobs.all(1)),
    method: 'GET',
    path: `${P}/projects/1/jobs?${page}`,
    reply: [aJob(), withField(aJob(), 'pipeline.project_id', 'x')],
    message: 'unexpected answer from GET projects/1/jobs: item 1: field pipeline.project_id must be a number, got "x"',
    field: 'pipeline.project_id',
    item: 1,
  },
  {
    name: 'jobs.allForPipeline, finished_at neither text nor null',
    call: (c) => collect(c.jobs.allForPipeline('acme/api', 100, { include_retried: true })),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/pipelines/100/jobs?include_retried=true&${page}`,
    reply: [withField(aJob(), 'finished_at', 5)],
    message:
      'unexpected answer from GET projects/acme%2Fapi/pipelines/100/jobs: item 0: field finished_at must be a string or null, got 5',
    field: 'finished_at',
    item: 0,
  },
  {
    name: 'jobs.allForPipeline, no pipeline at all',
    call: (c) => collect(c.jobs.allForPipeline(1, 100)),
    method: 'GET',
    path: `${P}/projects/1/pipelines/100/jobs?${page}`,
    reply: [withField(aJob(), 'pipeline', null)],
    message:
      'unexpected answer from GET projects/1/pipelines/100/jobs: item 0: field pipeline must be an object, got null',
    field: 'pipeline',
    item: 0,
  },
  {
    name: 'jobs.show, an HTML page answered 200 by a proxy',
    call: (c) => c.jobs.show(1, 5),
    method: 'GET',
    path: `${P}/projects/1/jobs/5`,
    reply: '<html><head><title>Sign in</title></head></html>',
    message:
      'unexpected answer from GET projects/1/jobs/5: expected an object, got "<html><head><title>Sign in</title></head></html>"',
    field: '',
  },
  {
    name: 'jobs.show, allow_failure as text',
    call: (c) => c.jobs.show(1, 5),
    method: 'GET',
    path: `${P}/projects/1/jobs/5`,
    reply: withField(aJob(), 'allow_failure', 'false'),
    message: 'unexpected answer from GET projects/1/jobs/5: field allow_failure must be a boolean, got "false"',
    field: 'allow_failure',
  },
  {
    name: 'jobs.retry, an answer without the new id',
    call: (c) => c.jobs.retry(1, 5),
    method: 'POST',
    path: `${P}/projects/1/jobs/5/retry`,
    reply: withField(aJob(), 'id', undefined),
    message: 'unexpected answer from POST projects/1/jobs/5/retry: field id missing',
    field: 'id',
  },
  {
    name: 'registry.all, a repository without project_id',
    call: (c) => collect(c.registry.all('acme/api', { tags_count: true })),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/registry/repositories?tags_count=true&${page}`,
    reply: [withField(aRepository(), 'project_id', undefined)],
    message: 'unexpected answer from GET projects/acme%2Fapi/registry/repositories: item 0: field project_id missing',
    field: 'project_id',
    item: 0,
  },
  {
    name: 'registry.allForGroup, a repository id as text',
    call: (c) => collect(c.registry.allForGroup('acme')),
    method: 'GET',
    path: `${P}/groups/acme/registry/repositories?${page}`,
    reply: [aRepository(), withField(aRepository(), 'id', '9')],
    message: 'unexpected answer from GET groups/acme/registry/repositories: item 1: field id must be a number, got "9"',
    field: 'id',
    item: 1,
  },
  {
    name: 'registry.allTags, a tag without a name',
    call: (c) => collect(c.registry.allTags(1, 9)),
    method: 'GET',
    path: `${P}/projects/1/registry/repositories/9/tags?${page}`,
    reply: [{ name: 'main' }, { path: 'acme/api/app:x' }],
    message: 'unexpected answer from GET projects/1/registry/repositories/9/tags: item 1: field name missing',
    field: 'name',
    item: 1,
  },
  {
    name: 'registry.showTag, no created_at at all',
    call: (c) => c.registry.showTag(1, 9, 'v1'),
    method: 'GET',
    path: `${P}/projects/1/registry/repositories/9/tags/v1`,
    reply: withField(aTag({ name: 'v1' }), 'created_at', undefined),
    message: 'unexpected answer from GET projects/1/registry/repositories/9/tags/v1: field created_at missing',
    field: 'created_at',
  },
  {
    name: 'groupAccessRequests.all, no requested_at',
    call: (c) => collect(c.groupAccessRequests.all('acme')),
    method: 'GET',
    path: `${P}/groups/acme/access_requests?${page}`,
    reply: [withField(anAccessRequest(), 'requested_at', undefined)],
    message: 'unexpected answer from GET groups/acme/access_requests: item 0: field requested_at missing',
    field: 'requested_at',
    item: 0,
  },
  {
    name: 'projectAccessRequests.all, a user id as text',
    call: (c) => collect(c.projectAccessRequests.all(1)),
    method: 'GET',
    path: `${P}/projects/1/access_requests?${page}`,
    reply: [withField(anAccessRequest(), 'id', '12')],
    message: 'unexpected answer from GET projects/1/access_requests: item 0: field id must be a number, got "12"',
    field: 'id',
    item: 0,
  },
  {
    name: 'users.current without a username',
    call: (c) => c.users.current(),
    method: 'GET',
    path: `${P}/user`,
    reply: withField(aCurrentUser(), 'username', undefined),
    message: 'unexpected answer from GET user: field username missing',
    field: 'username',
  },
  {
    name: 'users.current, is_admin as text',
    call: (c) => c.users.current(),
    method: 'GET',
    path: `${P}/user`,
    reply: { ...aCurrentUser(), is_admin: 'false' },
    message: 'unexpected answer from GET user: field is_admin must be a boolean, got "false"',
    field: 'is_admin',
  },
  {
    name: 'users.show, an empty answer',
    call: (c) => c.users.show(4),
    method: 'GET',
    path: `${P}/users/4`,
    reply: '',
    message: 'unexpected answer from GET users/4: expected an object, got nothing',
    field: '',
  },
  {
    name: 'sshKeys.all, expires_at a number',
    call: (c) => collect(c.sshKeys.all()),
    method: 'GET',
    path: `${P}/user/keys?${page}`,
    reply: [anSshKey({ expires_at: undefined }), withField(anSshKey(), 'expires_at', 1700000000)],
    message: 'unexpected answer from GET user/keys: item 1: field expires_at must be a string or null, got 1700000000',
    field: 'expires_at',
    item: 1,
  },
  {
    name: 'sshKeys.allForUser, no key text',
    call: (c) => collect(c.sshKeys.allForUser(4)),
    method: 'GET',
    path: `${P}/users/4/keys?${page}`,
    reply: [withField(anSshKey(), 'key', undefined)],
    message: 'unexpected answer from GET users/4/keys: item 0: field key missing',
    field: 'key',
    item: 0,
  },
  {
    name: 'deployKeys.all, can_push as text',
    call: (c) => collect(c.deployKeys.all('acme/api')),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/deploy_keys?${page}`,
    reply: [withField(aDeployKey(), 'can_push', 'yes')],
    message:
      'unexpected answer from GET projects/acme%2Fapi/deploy_keys: item 0: field can_push must be a boolean, got "yes"',
    field: 'can_push',
    item: 0,
  },
  {
    name: 'a listing that answers an object',
    call: (c) => collect(c.deployKeys.all(1)),
    method: 'GET',
    path: `${P}/projects/1/deploy_keys?${page}`,
    reply: { message: 'not a list' },
    message: 'unexpected answer from GET projects/1/deploy_keys: expected a JSON array, got an object',
    field: '',
  },
  {
    name: 'projects.all, a project without archived status',
    call: (c) => collect(c.projects.all()),
    method: 'GET',
    path: `${P}/projects?${page}`,
    reply: [{ id: 1, path_with_namespace: 'acme/api', namespace: { full_path: 'acme' } }],
    message: 'unexpected answer from GET projects: item 0: field archived missing',
    field: 'archived',
    item: 0,
  },
  {
    name: 'projects.allForGroup simple, a namespace without full path',
    call: (c) => collect(c.projects.allForGroup('acme', { simple: true })),
    method: 'GET',
    path: `${P}/groups/acme/projects?simple=true&${page}`,
    reply: [{ id: 1, path_with_namespace: 'acme/api', namespace: { id: 10 } }],
    message: 'unexpected answer from GET groups/acme/projects: item 0: field namespace.full_path missing',
    field: 'namespace.full_path',
    item: 0,
  },
  {
    name: 'groups.descendantGroups, a parent_id as text',
    call: (c) => collect(c.groups.descendantGroups('acme')),
    method: 'GET',
    path: `${P}/groups/acme/descendant_groups?${page}`,
    reply: [{ id: 11, full_path: 'acme/platform', parent_id: '10' }],
    message:
      'unexpected answer from GET groups/acme/descendant_groups: item 0: field parent_id must be a number or null, got "10"',
    field: 'parent_id',
    item: 0,
  },
  {
    name: 'projectTransfer.exportStatus, no export_status',
    call: (c) => c.projectTransfer.exportStatus('acme/api'),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/export`,
    reply: { id: 1, path_with_namespace: 'acme/api' },
    message: 'unexpected answer from GET projects/acme%2Fapi/export: field export_status missing',
    field: 'export_status',
  },
  {
    name: 'projectTransfer.import, an answer without the new project’s id',
    // Any file will do: the client uploads what it is given, the forge judges it.
    call: (c) => c.projectTransfer.import({ file: __filename, path: 'api-copy', namespace: 'vault' }),
    method: 'POST',
    path: `${P}/projects/import`,
    reply: { path_with_namespace: 'vault/api-copy', import_status: 'scheduled', import_error: null },
    message: 'unexpected answer from POST projects/import: field id missing',
    field: 'id',
  },
  {
    name: 'projectTransfer.importStatus, import_error neither text nor null',
    call: (c) => c.projectTransfer.importStatus(7),
    method: 'GET',
    path: `${P}/projects/7/import`,
    reply: { id: 7, path_with_namespace: 'vault/api-copy', import_status: 'failed', import_error: 5 },
    message: 'unexpected answer from GET projects/7/import: field import_error must be a string or null, got 5',
    field: 'import_error',
  },
];

describe('forge answers are checked against the shape the code relies on', () => {
  let forge: MockForge;
  beforeEach(() => {
    forge = new MockForge();
  });
  afterEach(async () => {
    await forge.close();
  });

  function answer(c: Pick<Case, 'path' | 'method' | 'reply'>): void {
    const text = typeof c.reply === 'string' ? c.reply : JSON.stringify(c.reply);
    const type = typeof c.reply === 'string' ? 'text/html' : 'application/json';
    forge.pool.intercept({ path: c.path, method: c.method }).reply(200, text, { headers: { 'content-type': type } });
  }

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    answer(c);
    const error = await c.call(forge.client()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ message: c.message, status: 200, method: c.method, field: c.field, item: c.item });
    // Reported where the answer was read: nothing else was asked, and a write is not repeated.
    expect(forge.calls()).toHaveLength(1);
  });

  it('counts items across pages and keeps the page on the error', async () => {
    const path = (n: number) => `${P}/projects/1/jobs?page=${n}&per_page=100`;
    forge.pool
      .intercept({ path: path(1), method: 'GET' })
      .reply(200, jobs(500, 100), { headers: { 'x-next-page': '2' } });
    forge.pool
      .intercept({ path: path(2), method: 'GET' })
      .reply(200, [...jobs(400, 2), withField(aJob({ id: 398 }), 'pipeline.id', undefined)]);
    const seen: number[] = [];
    const error = await (async () => {
      for await (const job of forge.client().jobs.all(1)) seen.push(job.id);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect(error).toMatchObject({
      message: 'unexpected answer from GET projects/1/jobs: item 102: field pipeline.id missing',
      path: 'projects/1/jobs?page=2&per_page=100',
      item: 102,
    });
    // The good records before it were handed over as usual, as a streamed listing does.
    expect(seen).toHaveLength(102);
  });

  it('passes unknown fields through and hands over the record as answered', async () => {
    const job = { ...aJob({ id: 5 }), brand_new_field: { nested: true }, finished_at: null };
    answer({ path: `${P}/projects/1/jobs/5`, method: 'GET', reply: job });
    expect(await forge.client().jobs.show(1, 5)).toEqual(job);
  });

  it('accepts null where the type allows it and optional fields left out', async () => {
    answer({
      path: `${P}/projects/1/registry/repositories/9/tags/v1`,
      method: 'GET',
      reply: aTag({ name: 'v1', created_at: null }),
    });
    answer({
      path: `${P}/user/keys?${page}`,
      method: 'GET',
      reply: [withField(anSshKey(), 'expires_at', undefined), anSshKey({ expires_at: null })],
    });
    answer({ path: `${P}/user`, method: 'GET', reply: aCurrentUser() });
    answer({ path: `${P}/users/4`, method: 'GET', reply: { ...aUser(), is_admin: true, email: 'ann@example.com' } });
    const client = forge.client();
    expect((await client.registry.showTag(1, 9, 'v1')).created_at).toBeNull();
    expect(await collect(client.sshKeys.all())).toHaveLength(2);
    expect((await client.users.current()).username).toBe('ann');
    expect((await client.users.show(4)).id).toBe(4);
  });

  it('does not check a record past the point where `until` stopped the listing', async () => {
    answer({
      path: `${P}/projects/1/jobs?${page}`,
      method: 'GET',
      reply: [aJob({ id: 9 }), aJob({ id: 8 }), withField(aJob({ id: 7 }), 'pipeline', undefined)],
    });
    const got = await collect(forge.client().jobs.all(1, {}, { until: (job) => job.id <= 8 }));
    expect(got.map((job) => job.id)).toEqual([9]);
  });
});
