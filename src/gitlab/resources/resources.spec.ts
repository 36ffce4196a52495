import type { GitlabClient } from '../client';
import { BulkDeleteAlreadyRequestedError, ValidationError } from '../transport/errors';
import { MockForge } from '../../../test/support/gitlab/mock-forge';
import {
  aCurrentUser,
  aDeployKey,
  aJob,
  anSshKey,
  aRepository,
  aTag,
  aUser,
} from '../../../test/support/gitlab/records';

type Case = {
  name: string;
  call: (c: GitlabClient) => Promise<unknown>;
  method: string;
  path: string;
  body?: unknown;
  reply?: unknown;
  auth?: 'private' | 'job';
};

const list = (c: AsyncIterable<unknown>) =>
  (async () => {
    const out: unknown[] = [];
    for await (const item of c) out.push(item);
    return out;
  })();

const P = '/api/v4';
const page = 'page=1&per_page=100';

const cases: Case[] = [
  // Jobs
  {
    name: 'jobs.all',
    call: (c) => list(c.jobs.all('acme/api')),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/jobs?${page}`,
    reply: [],
  },
  {
    name: 'jobs.all scope',
    call: (c) => list(c.jobs.all(1, { scope: ['failed', 'canceled'] })),
    method: 'GET',
    path: `${P}/projects/1/jobs?scope%5B%5D=failed&scope%5B%5D=canceled&${page}`,
    reply: [],
  },
  {
    name: 'jobs.allForPipeline',
    call: (c) => list(c.jobs.allForPipeline('acme/api', 77, { scope: 'failed', include_retried: true })),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/pipelines/77/jobs?scope=failed&include_retried=true&${page}`,
    reply: [],
  },
  {
    name: 'jobs.allBridges',
    call: (c) => list(c.jobs.allBridges(1, 77, { scope: ['success'] })),
    method: 'GET',
    path: `${P}/projects/1/pipelines/77/bridges?scope%5B%5D=success&${page}`,
    reply: [],
  },
  { name: 'jobs.current', call: (c) => c.jobs.current(), method: 'GET', path: `${P}/job`, auth: 'job' },
  {
    name: 'jobs.allowedAgents',
    call: (c) => c.jobs.allowedAgents(),
    method: 'GET',
    path: `${P}/job/allowed_agents`,
    auth: 'job',
  },
  {
    name: 'jobs.show',
    call: (c) => c.jobs.show('acme/api', 5),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/jobs/5`,
    reply: aJob(),
  },
  {
    name: 'jobs.trace',
    call: (c) => c.jobs.trace(1, 5),
    method: 'GET',
    path: `${P}/projects/1/jobs/5/trace`,
    reply: 'log',
  },
  { name: 'jobs.cancel', call: (c) => c.jobs.cancel(1, 5), method: 'POST', path: `${P}/projects/1/jobs/5/cancel` },
  { name: 'jobs.retry', call: (c) => c.jobs.retry(1, 5), method: 'POST', path: `${P}/projects/1/jobs/5/retry` },
  { name: 'jobs.erase', call: (c) => c.jobs.erase(1, 5), method: 'POST', path: `${P}/projects/1/jobs/5/erase` },
  { name: 'jobs.play', call: (c) => c.jobs.play(1, 5), method: 'POST', path: `${P}/projects/1/jobs/5/play` },
  // Container registry
  {
    name: 'registry.all',
    call: (c) => list(c.registry.all('acme/api', { tags: true, tags_count: true })),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/registry/repositories?tags=true&tags_count=true&${page}`,
    reply: [],
  },
  {
    name: 'registry.allForGroup',
    call: (c) => list(c.registry.allForGroup('acme', { tags_count: true })),
    method: 'GET',
    path: `${P}/groups/acme/registry/repositories?tags_count=true&${page}`,
    reply: [],
  },
  {
    name: 'registry.show',
    call: (c) => c.registry.show(9, { tags: true }),
    method: 'GET',
    path: `${P}/registry/repositories/9?tags=true`,
    reply: aRepository(),
  },
  {
    name: 'registry.remove',
    call: (c) => c.registry.remove('acme/api', 9),
    method: 'DELETE',
    path: `${P}/projects/acme%2Fapi/registry/repositories/9`,
  },
  {
    name: 'registry.allTags',
    call: (c) => list(c.registry.allTags(1, 9)),
    method: 'GET',
    path: `${P}/projects/1/registry/repositories/9/tags?${page}`,
    reply: [],
  },
  {
    name: 'registry.showTag',
    call: (c) => c.registry.showTag(1, 9, 'v1.2.3'),
    method: 'GET',
    path: `${P}/projects/1/registry/repositories/9/tags/v1.2.3`,
    reply: aTag(),
  },
  {
    name: 'registry.removeTag',
    call: (c) => c.registry.removeTag(1, 9, 'feature/x'),
    method: 'DELETE',
    path: `${P}/projects/1/registry/repositories/9/tags/feature%2Fx`,
  },
  {
    name: 'registry.removeTags',
    call: (c) =>
      c.registry.removeTags('acme/api', 9, {
        name_regex_delete: '.*',
        name_regex: '.*',
        name_regex_keep: '^(main|v\\d+)$',
        keep_n: 10,
        older_than: '14d',
      }),
    method: 'DELETE',
    path:
      `${P}/projects/acme%2Fapi/registry/repositories/9/tags?name_regex_delete=.*&name_regex=.*` +
      '&name_regex_keep=%5E%28main%7Cv%5Cd%2B%29%24&keep_n=10&older_than=14d',
  },
  // Namespaces
  {
    name: 'namespaces.all',
    call: (c) => list(c.namespaces.all({ search: 'ac' })),
    method: 'GET',
    path: `${P}/namespaces?search=ac&${page}`,
    reply: [],
  },
  {
    name: 'namespaces.show',
    call: (c) => c.namespaces.show('acme/team'),
    method: 'GET',
    path: `${P}/namespaces/acme%2Fteam`,
  },
  {
    name: 'namespaces.exists',
    call: (c) => c.namespaces.exists('new-team', { parent_id: 3 }),
    method: 'GET',
    path: `${P}/namespaces/new-team/exists?parent_id=3`,
  },
  // Users
  {
    name: 'users.all with every filter',
    call: (c) =>
      list(
        c.users.all({
          search: 'ann',
          username: 'ann',
          active: true,
          blocked: true,
          external: true,
          exclude_internal: true,
          exclude_external: true,
          order_by: 'created_at',
          sort: 'asc',
          two_factor: 'enabled',
          without_projects: true,
          admins: true,
          extern_uid: 'u-1',
          provider: 'ldap',
          created_before: '2024-02-01T00:00:00.000Z',
          created_after: new Date(Date.UTC(2024, 0, 1)),
          custom_attributes: { team: 'core' },
          with_custom_attributes: true,
        }),
      ),
    method: 'GET',
    path:
      `${P}/users?search=ann&username=ann&active=true&blocked=true&external=true&exclude_internal=true` +
      '&exclude_external=true&order_by=created_at&sort=asc&two_factor=enabled&without_projects=true&admins=true' +
      '&extern_uid=u-1&provider=ldap&created_before=2024-02-01T00%3A00%3A00.000Z' +
      '&created_after=2024-01-01T00%3A00%3A00.000Z&custom_attributes%5Bteam%5D=core&with_custom_attributes=true' +
      `&${page}`,
    reply: [],
  },
  {
    name: 'users.show',
    call: (c) => c.users.show(4, { with_custom_attributes: true }),
    method: 'GET',
    path: `${P}/users/4?with_custom_attributes=true`,
    reply: aUser(),
  },
  { name: 'users.current', call: (c) => c.users.current(), method: 'GET', path: `${P}/user`, reply: aCurrentUser() },
  {
    name: 'users.current sudo',
    call: (c) => c.users.current({ sudo: 8 }),
    method: 'GET',
    path: `${P}/user?sudo=8`,
    reply: aCurrentUser(),
  },
  // SSH keys
  { name: 'sshKeys.all', call: (c) => list(c.sshKeys.all()), method: 'GET', path: `${P}/user/keys?${page}`, reply: [] },
  {
    name: 'sshKeys.allForUser',
    call: (c) => list(c.sshKeys.allForUser('ann')),
    method: 'GET',
    path: `${P}/users/ann/keys?${page}`,
    reply: [],
  },
  { name: 'sshKeys.show', call: (c) => c.sshKeys.show(3), method: 'GET', path: `${P}/user/keys/3`, reply: anSshKey() },
  {
    name: 'sshKeys.create',
    call: (c) => c.sshKeys.create({ title: 'ci', key: 'ssh-ed25519 AAAA', expires_at: '2025-01-01T00:00:00.000Z' }),
    method: 'POST',
    path: `${P}/user/keys`,
    body: { title: 'ci', key: 'ssh-ed25519 AAAA', expires_at: '2025-01-01T00:00:00.000Z' },
  },
  {
    name: 'sshKeys.createForUser',
    call: (c) => c.sshKeys.createForUser(4, { title: 'ci', key: 'k', expires_at: new Date(Date.UTC(2025, 0, 1)) }),
    method: 'POST',
    path: `${P}/users/4/keys`,
    body: { title: 'ci', key: 'k', expires_at: '2025-01-01T00:00:00.000Z' },
  },
  { name: 'sshKeys.remove', call: (c) => c.sshKeys.remove(3), method: 'DELETE', path: `${P}/user/keys/3` },
  {
    name: 'sshKeys.removeForUser',
    call: (c) => c.sshKeys.removeForUser(4, 3),
    method: 'DELETE',
    path: `${P}/users/4/keys/3`,
  },
  // Deploy keys
  {
    name: 'deployKeys.allForInstance',
    call: (c) => list(c.deployKeys.allForInstance()),
    method: 'GET',
    path: `${P}/deploy_keys?${page}`,
    reply: [],
  },
  {
    name: 'deployKeys.all',
    call: (c) => list(c.deployKeys.all('acme/api')),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/deploy_keys?${page}`,
    reply: [],
  },
  {
    name: 'deployKeys.show',
    call: (c) => c.deployKeys.show(1, 6),
    method: 'GET',
    path: `${P}/projects/1/deploy_keys/6`,
    reply: aDeployKey(),
  },
  {
    name: 'deployKeys.create',
    call: (c) => c.deployKeys.create(1, { title: 'release', key: 'k', can_push: false }),
    method: 'POST',
    path: `${P}/projects/1/deploy_keys`,
    body: { title: 'release', key: 'k', can_push: false },
  },
  {
    name: 'deployKeys.edit',
    call: (c) => c.deployKeys.edit(1, 6, { title: 'release-old', can_push: true }),
    method: 'PUT',
    path: `${P}/projects/1/deploy_keys/6`,
    body: { title: 'release-old', can_push: true },
  },
  {
    name: 'deployKeys.remove',
    call: (c) => c.deployKeys.remove(1, 6),
    method: 'DELETE',
    path: `${P}/projects/1/deploy_keys/6`,
  },
  {
    name: 'deployKeys.enable',
    call: (c) => c.deployKeys.enable('acme/web', 6),
    method: 'POST',
    path: `${P}/projects/acme%2Fweb/deploy_keys/6/enable`,
  },
  // Access requests
  {
    name: 'groupAccessRequests.all',
    call: (c) => list(c.groupAccessRequests.all('acme')),
    method: 'GET',
    path: `${P}/groups/acme/access_requests?${page}`,
    reply: [],
  },
  {
    name: 'projectAccessRequests.all',
    call: (c) => list(c.projectAccessRequests.all('acme/api')),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/access_requests?${page}`,
    reply: [],
  },
  {
    name: 'groupAccessRequests.request',
    call: (c) => c.groupAccessRequests.request('acme/sub'),
    method: 'POST',
    path: `${P}/groups/acme%2Fsub/access_requests`,
  },
  {
    name: 'projectAccessRequests.request',
    call: (c) => c.projectAccessRequests.request(1),
    method: 'POST',
    path: `${P}/projects/1/access_requests`,
  },
  {
    name: 'groupAccessRequests.approve',
    call: (c) => c.groupAccessRequests.approve('acme', 12, { access_level: 50 }),
    method: 'PUT',
    path: `${P}/groups/acme/access_requests/12/approve`,
    body: { access_level: 50 },
  },
  {
    name: 'projectAccessRequests.approve (default level)',
    call: (c) => c.projectAccessRequests.approve(1, 12),
    method: 'PUT',
    path: `${P}/projects/1/access_requests/12/approve`,
    body: {},
  },
  {
    name: 'groupAccessRequests.deny',
    call: (c) => c.groupAccessRequests.deny('acme', 12),
    method: 'DELETE',
    path: `${P}/groups/acme/access_requests/12`,
  },
  {
    name: 'projectAccessRequests.deny',
    call: (c) => c.projectAccessRequests.deny(1, 12),
    method: 'DELETE',
    path: `${P}/projects/1/access_requests/12`,
  },
  // Projects, groups and version (GitLab's public API docs)
  {
    name: 'projects.all keyset',
    call: (c) =>
      list(c.projects.all({ pagination: 'keyset', order_by: 'id', sort: 'asc', archived: false, simple: true })),
    method: 'GET',
    path: `${P}/projects?pagination=keyset&order_by=id&sort=asc&archived=false&simple=true&${page}`,
    reply: [],
  },
  {
    name: 'projects.all membership',
    call: (c) => list(c.projects.all({ membership: true, search: 'api' })),
    method: 'GET',
    path: `${P}/projects?membership=true&search=api&${page}`,
    reply: [],
  },
  {
    name: 'projects.show',
    call: (c) => c.projects.show('acme/api'),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi`,
    reply: { id: 1, path_with_namespace: 'acme/api', archived: false, namespace: { full_path: 'acme' } },
  },
  {
    name: 'projects.allForGroup',
    call: (c) =>
      list(c.projects.allForGroup('acme/platform', { include_subgroups: true, with_shared: false, archived: true })),
    method: 'GET',
    path: `${P}/groups/acme%2Fplatform/projects?include_subgroups=true&with_shared=false&archived=true&${page}`,
    reply: [],
  },
  {
    name: 'groups.all',
    call: (c) => list(c.groups.all({ top_level_only: true, all_available: true, skip_groups: [3, 4] })),
    method: 'GET',
    path: `${P}/groups?top_level_only=true&all_available=true&skip_groups%5B%5D=3&skip_groups%5B%5D=4&${page}`,
    reply: [],
  },
  {
    name: 'groups.show',
    call: (c) => c.groups.show('acme/platform', { with_projects: false }),
    method: 'GET',
    path: `${P}/groups/acme%2Fplatform?with_projects=false`,
    reply: { id: 11, full_path: 'acme/platform', parent_id: 10 },
  },
  {
    name: 'groups.subgroups',
    call: (c) => list(c.groups.subgroups(10, { search: 'plat' })),
    method: 'GET',
    path: `${P}/groups/10/subgroups?search=plat&${page}`,
    reply: [],
  },
  {
    name: 'groups.descendantGroups',
    call: (c) => list(c.groups.descendantGroups('acme')),
    method: 'GET',
    path: `${P}/groups/acme/descendant_groups?${page}`,
    reply: [],
  },
  {
    name: 'version.show',
    call: (c) => c.version.show(),
    method: 'GET',
    path: `${P}/version`,
    reply: { version: '17.5.0', revision: 'abc' },
  },
  // Project export and import (GitLab's public API docs)
  {
    name: 'projectTransfer.scheduleExport',
    call: (c) => c.projectTransfer.scheduleExport('acme/api'),
    method: 'POST',
    path: `${P}/projects/acme%2Fapi/export`,
  },
  {
    name: 'projectTransfer.scheduleExport description',
    call: (c) => c.projectTransfer.scheduleExport(1, { description: 'For the vault' }),
    method: 'POST',
    path: `${P}/projects/1/export`,
    body: { description: 'For the vault' },
  },
  {
    name: 'projectTransfer.exportStatus',
    call: (c) => c.projectTransfer.exportStatus('acme/api'),
    method: 'GET',
    path: `${P}/projects/acme%2Fapi/export`,
    reply: { id: 1, export_status: 'none' },
  },
  {
    name: 'projectTransfer.importStatus',
    call: (c) => c.projectTransfer.importStatus('vault/api'),
    method: 'GET',
    path: `${P}/projects/vault%2Fapi/import`,
    reply: { id: 7, path_with_namespace: 'vault/api', import_status: 'finished', import_error: null },
  },
];

describe('resources: every endpoint goes out as the forge expects', () => {
  let forge: MockForge;
  beforeEach(() => {
    forge = new MockForge();
  });
  afterEach(async () => {
    await forge.close();
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const reply = c.reply ?? { id: 1 };
    forge.pool
      .intercept({ path: c.path, method: c.method })
      .reply(c.method === 'DELETE' ? 204 : 200, typeof reply === 'string' ? reply : JSON.stringify(reply), {
        headers: { 'content-type': typeof reply === 'string' ? 'text/plain' : 'application/json' },
      });
    await c.call(forge.client());
    const calls = forge.calls();
    expect(calls).toHaveLength(1);
    expect(calls[0].method).toBe(c.method);
    expect(calls[0].path).toBe(c.path);
    expect(calls[0].body).toEqual(c.body);
    const header = c.auth === 'job' ? 'job-token' : 'private-token';
    expect(calls[0].headers[header]).toBeDefined();
  });

  it('turns the once-an-hour bulk deletion refusal (a 400) into BulkDeleteAlreadyRequestedError', async () => {
    forge.pool
      .intercept({ path: (p) => p.startsWith(`${P}/projects/1/registry/repositories/9/tags?`), method: 'DELETE' })
      .reply(400, {
        message:
          'This request has already been made. You can run this at most once an hour for a given container repository',
      });
    const error = await forge
      .client()
      .registry.removeTags(1, 9, { name_regex_delete: '.*' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BulkDeleteAlreadyRequestedError);
    expect(error).toBeInstanceOf(ValidationError);
    expect(forge.calls()).toHaveLength(1);
  });

  it('leaves other 400s of bulk deletion as plain ValidationError', async () => {
    forge.pool
      .intercept({ path: (p) => p.startsWith(`${P}/projects/1/registry/repositories/9/tags?`), method: 'DELETE' })
      .reply(400, { message: { name_regex_delete: ['not valid RE2 syntax: missing )'] } });
    const error = await forge
      .client()
      .registry.removeTags(1, 9, { name_regex_delete: '(' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).not.toBeInstanceOf(BulkDeleteAlreadyRequestedError);
    expect((error as ValidationError).message).toBe('name_regex_delete: not valid RE2 syntax: missing )');
  });
});
