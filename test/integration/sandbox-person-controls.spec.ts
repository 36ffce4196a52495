import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { generateEd25519PublicKey } from '../../src/sandbox/ssh-key';
import { apiClient, call, type SandboxResponse } from '../support/sandbox-http';
import { acmeGroup, ADMIN_TOKEN, aProject, baseWorld, OUTSIDER_TOKEN, USER_TOKEN } from '../support/world-builders';

/**
 * The control endpoints that play a person or an administrator changing the forge under the bot: archiving,
 * deleting projects, groups and users, removing members, narrowing a token's access. Each is checked by what the
 * API answers afterwards and by the state the sandbox holds.
 */

const ROOT = 1;
const ALICE = 3;
const OLAF = 4;
const API = 1;
const LIB = 3;
const TOOL = 4;
const HOME = 5;
const FAILED_JOB = 5;
const REPOSITORY = 7;

interface Identified {
  id: number;
}

describe('sandbox forge: control endpoints that play people', () => {
  let sandbox: RunningSandbox;
  const admin = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, ADMIN_TOKEN);
  const alice = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, USER_TOKEN);
  const olaf = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, OUTSIDER_TOKEN);
  const control = (path: string, method = 'GET', body?: unknown): Promise<SandboxResponse> =>
    call(sandbox.url, `/__sandbox${path}`, { method, body });
  const ids = (response: SandboxResponse): number[] =>
    (response.json as Identified[]).map((r) => r.id).sort((a, b) => a - b);
  const notFound = (what: string): { status: number; json: unknown } => ({
    status: 404,
    json: { message: `404 ${what} Not Found` },
  });

  beforeEach(async () => {
    const world = baseWorld();
    sandbox = await startSandbox({
      world: {
        ...world,
        users: [
          ...(world.users ?? []).map((u) =>
            u.username === 'alice'
              ? { ...u, ssh_keys: [{ id: 60, title: 'laptop', key: generateEd25519PublicKey('laptop') }] }
              : u,
          ),
          { id: 5, username: 'pat', name: 'Pat Solo', tokens: ['glpat-pat'] },
        ],
        groups: [
          acmeGroup({ access_requests: [{ user: 'olaf' }] }),
          { id: 11, path: 'sub', parent: 'acme' },
          { id: 20, path: 'other' },
          { id: 30, path: 'pats', members: [{ user: 'pat', access_level: 'owner' }] },
        ],
        projects: [
          aProject('api', {
            id: API,
            members: [{ user: 'olaf', access_level: 'developer' }],
            pipelines: [
              { id: 100, jobs: [{ id: FAILED_JOB, name: 'test', status: 'failed', log: 'connection reset\n' }] },
            ],
            registry: [
              {
                id: REPOSITORY,
                tags: [
                  { name: 'v1', created_at: 'now-3d' },
                  { name: 'old', created_at: 'now-30d' },
                ],
              },
            ],
            protected_branches: [{ name: 'main' }],
            hooks: [{ url: 'http://127.0.0.1:9/hook', job_events: true }],
            issues: [{ iid: 1, title: 'Flaky', label_events: [{ user: 'alice', action: 'add', label: 'bug' }] }],
          }),
          aProject('web', { id: 2 }),
          { id: LIB, path: 'lib', namespace: 'acme/sub' },
          {
            id: TOOL,
            path: 'tool',
            namespace: 'other',
            shared_with_groups: ['acme'],
            protected_branches: [{ name: 'main', allowed_to_push: [{ group: 'acme' }, { user: 'alice' }] }],
          },
          { id: HOME, path: 'home', namespace: 'pat' },
        ],
        deploy_keys: [
          {
            id: 50,
            title: 'shared',
            key: generateEd25519PublicKey('shared'),
            projects: [{ project: 'acme/api' }, { project: 'other/tool', can_push: true }],
          },
          { id: 51, title: 'api only', key: generateEd25519PublicKey('api'), projects: [{ project: 'acme/api' }] },
        ],
      },
    });
  });
  afterEach(() => sandbox.close());

  describe('archiving', () => {
    it('makes a project read-only until it is unarchived, and answers the changed record', async () => {
      const archived = await control('/projects/acme%2Fapi/archive', 'POST');
      expect(archived).toMatchObject({
        status: 200,
        json: { id: API, archived: true, path_with_namespace: 'acme/api' },
      });
      expect((await admin()(`/projects/${API}`)).json).toMatchObject({ archived: true });
      expect(await alice()(`/projects/${API}/jobs/${FAILED_JOB}/retry`, { method: 'POST' })).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden' },
      });
      expect(
        (await admin()(`/projects/${API}/registry/repositories/${REPOSITORY}/tags/old`, { method: 'DELETE' })).status,
      ).toBe(403);
      expect([...sandbox.state.jobs.keys()]).toEqual([FAILED_JOB]);

      const unarchived = await control(`/projects/${API}/unarchive`, 'POST');
      expect(unarchived).toMatchObject({ status: 200, json: { id: API, archived: false } });
      expect((await alice()(`/projects/${API}/jobs/${FAILED_JOB}/retry`, { method: 'POST' })).status).toBe(200);
      expect(sandbox.state.jobs.size).toBe(2);
    });

    it('answers 404 for an unknown project', async () => {
      expect(await control('/projects/999/archive', 'POST')).toMatchObject(notFound('Project'));
      expect(await control('/projects/acme%2Fnope/unarchive', 'POST')).toMatchObject(notFound('Project'));
    });
  });

  describe('deleting a project', () => {
    it('removes it with its jobs, registry, deploy-key links, hooks, branches, issues and people', async () => {
      expect(await control('/projects/acme%2Fapi', 'DELETE')).toMatchObject({ status: 204, text: '' });

      for (const path of [
        '',
        '/jobs',
        `/jobs/${FAILED_JOB}`,
        '/registry/repositories',
        '/deploy_keys',
        '/hooks',
        '/protected_branches',
      ]) {
        expect(await admin()(`/projects/${API}${path}`)).toMatchObject(notFound('Project'));
      }
      expect(await admin()(`/registry/repositories/${REPOSITORY}`)).toMatchObject({
        status: 404,
        json: { message: '404 Not found' },
      });
      expect(ids(await admin()('/projects'))).toEqual([2, LIB, TOOL, HOME]);
      // other/tool stays listed: it is shared with acme.
      expect(ids(await admin()('/groups/acme/projects?include_subgroups=true'))).toEqual([2, LIB, TOOL]);
      expect((await admin()('/groups/acme')).json).toMatchObject({ projects: [{ id: 2 }] });
      expect((await admin()('/groups/acme/registry/repositories')).json).toEqual([]);
      // The shared key stays on the project it is still enabled on; the key of the deleted project alone goes.
      expect((await admin()('/deploy_keys')).json).toMatchObject([
        { id: 50, projects_with_write_access: [{ id: TOOL }], projects_with_readonly_access: [] },
      ]);

      const state = sandbox.state;
      const ofApi = (records: Iterable<{ project_id: number }>): unknown[] =>
        [...records].filter((r) => r.project_id === API);
      expect(ofApi(state.jobs.values())).toEqual([]);
      expect(ofApi(state.pipelines.values())).toEqual([]);
      expect(ofApi(state.repositories.values())).toEqual([]);
      expect(ofApi(state.protectedBranches.values())).toEqual([]);
      expect(ofApi(state.hooks.hooks.values())).toEqual([]);
      expect([...state.issues.values()].filter((i) => i.parent_id === API)).toEqual([]);
      expect(state.labelEvents.size).toBe(0);
      expect(state.members.filter((m) => m.source === 'project' && m.source_id === API)).toEqual([]);
      expect(state.projects.has(API)).toBe(false);

      expect(await control('/projects/acme%2Fapi', 'DELETE')).toMatchObject(notFound('Project'));
    });
  });

  describe('deleting a group', () => {
    it('removes its subgroups and projects, and the shares, branch entries and rules that named it', async () => {
      const rule = await admin()(`/projects/${TOOL}/approval_rules`, {
        method: 'POST',
        body: { name: 'acme reviewers', approvals_required: 1, group_ids: [10] },
      });
      expect(rule).toMatchObject({ status: 201, json: { groups: [{ id: 10 }] } });

      expect((await control('/groups/acme', 'DELETE')).status).toBe(204);

      expect(await admin()('/groups/10')).toMatchObject(notFound('Group'));
      expect(await admin()('/groups/acme%2Fsub')).toMatchObject(notFound('Group'));
      for (const id of [API, 2, LIB]) expect(await admin()(`/projects/${id}/jobs`)).toMatchObject(notFound('Project'));
      expect(ids(await admin()('/groups'))).toEqual([20, 30]);
      expect(ids(await admin()('/projects'))).toEqual([TOOL, HOME]);
      expect((await admin()(`/projects/${TOOL}`)).json).toMatchObject({ shared_with_groups: [] });
      const branch = (await admin()(`/projects/${TOOL}/protected_branches/main`)).json as {
        push_access_levels: { group_id: number | null }[];
      };
      expect(branch.push_access_levels.map((entry) => entry.group_id)).toEqual([null, null]);
      expect((await admin()(`/projects/${TOOL}/approval_rules`)).json).toMatchObject([
        { name: 'acme reviewers', groups: [] },
      ]);

      const state = sandbox.state;
      expect([...state.groups.keys()].sort()).toEqual([20, 30]);
      expect(state.members.filter((m) => m.source === 'group' && [10, 11].includes(m.source_id))).toEqual([]);
      expect(state.accessRequests).toEqual([]);
      expect(state.projectGroupLinks.size).toBe(0);
      expect([...state.deployKeys.keys()]).toEqual([50]);
      expect((await control('/state')).status).toBe(200);

      expect(await control('/groups/10', 'DELETE')).toMatchObject(notFound('Group'));
    });
  });

  describe('removing a member', () => {
    it('takes a group membership away: the group and its private projects drop out of what the user sees', async () => {
      expect(ids(await alice()('/groups'))).toContain(10);
      expect(ids(await alice()('/projects?membership=true'))).toEqual([API, 2, LIB]);

      expect((await control('/groups/acme/members/alice', 'DELETE')).status).toBe(204);

      expect(ids(await alice()('/groups'))).toEqual([]);
      expect(ids(await alice()('/projects?membership=true'))).toEqual([]);
      expect(await alice()(`/projects/${API}`)).toMatchObject(notFound('Project'));
      expect(sandbox.state.member('group', 10, ALICE)).toBeUndefined();

      expect(await control('/groups/acme/members/alice', 'DELETE')).toMatchObject(notFound('Member'));
      expect(await control('/groups/acme/members/nobody', 'DELETE')).toMatchObject(notFound('User'));
      expect(await control('/groups/nope/members/alice', 'DELETE')).toMatchObject(notFound('Group'));
    });

    it('takes a project membership away', async () => {
      expect(ids(await olaf()('/projects?membership=true'))).toEqual([API]);
      expect((await control(`/projects/${API}/members/${OLAF}`, 'DELETE')).status).toBe(204);
      expect(ids(await olaf()('/projects?membership=true'))).toEqual([]);
      expect(await olaf()(`/projects/${API}`)).toMatchObject(notFound('Project'));
      expect(sandbox.state.members.filter((m) => m.user_id === OLAF)).toEqual([]);
    });
  });

  describe('deleting a user', () => {
    it('removes the user, their keys and tokens, memberships, access requests and places in branch rules', async () => {
      expect(ids(await admin()(`/users/${ALICE}/keys`))).toEqual([60]);
      expect((await control('/users/alice', 'DELETE')).status).toBe(204);

      expect(await admin()(`/users/${ALICE}`)).toMatchObject(notFound('User'));
      expect(await admin()(`/users/${ALICE}/keys`)).toMatchObject(notFound('User'));
      expect((await alice()('/user')).status).toBe(401);
      const branch = (await admin()(`/projects/${TOOL}/protected_branches/main`)).json as {
        push_access_levels: { user_id: number | null }[];
      };
      expect(branch.push_access_levels.map((entry) => entry.user_id)).toEqual([null, null]);
      const state = sandbox.state;
      expect([...state.sshKeys.values()].filter((k) => k.user_id === ALICE)).toEqual([]);
      expect(state.members.filter((m) => m.user_id === ALICE)).toEqual([]);

      expect((await control(`/users/${OLAF}`, 'DELETE')).status).toBe(204);
      expect((await admin()('/groups/acme/access_requests')).json).toEqual([]);
      expect(state.accessRequests).toEqual([]);

      expect(await control('/users/alice', 'DELETE')).toMatchObject(notFound('User'));
    });

    it('refuses a sole group owner unless hard_delete, which takes their groups and personal projects along', async () => {
      const refused = await control('/users/pat', 'DELETE');
      expect(refused).toMatchObject({
        status: 409,
        json: { message: 'User cannot be removed while is the sole-owner of a group' },
      });
      expect(sandbox.state.users.has(5)).toBe(true);

      expect((await control('/users/pat?hard_delete=true', 'DELETE')).status).toBe(204);
      expect(await admin()('/groups/pats')).toMatchObject(notFound('Group'));
      expect(await admin()(`/projects/${HOME}`)).toMatchObject(notFound('Project'));
      expect(sandbox.state.projects.has(HOME)).toBe(false);
    });
  });

  describe('access overrides', () => {
    it('hides a project from an administrator at level 0, out of listings too', async () => {
      const set = await control('/access', 'POST', { user: 'root', project: 'acme/api', level: 0 });
      expect(set).toMatchObject({
        status: 200,
        json: { user_id: ROOT, source: 'project', source_id: API, access_level: 0 },
      });

      expect(await admin()(`/projects/${API}`)).toMatchObject(notFound('Project'));
      expect(await admin()('/projects/acme%2Fapi/jobs')).toMatchObject(notFound('Project'));
      expect(ids(await admin()('/projects'))).toEqual([2, LIB, TOOL, HOME]);
      expect(ids(await admin()('/groups/acme/projects'))).toEqual([2, TOOL]);
      expect((await admin()('/groups/acme')).json).toMatchObject({ projects: [{ id: 2 }] });
      expect((await admin()('/groups/acme/registry/repositories')).json).toEqual([]);
      // Other users keep their access.
      expect((await alice()(`/projects/${API}`)).status).toBe(200);
    });

    it('gives the 403s of a lower role at level 20 while reads work, until the overrides are cleared', async () => {
      await control('/access', 'POST', { user: 'root', project: API, level: 40 });
      await control('/access', 'POST', { user: ROOT, project: 'acme/api', level: 20 });
      expect((await control('/access')).json).toEqual([
        { user_id: ROOT, source: 'project', source_id: API, access_level: 20 },
      ]);

      const tagPath = `/projects/${API}/registry/repositories/${REPOSITORY}/tags/old`;
      expect((await admin()(tagPath)).status).toBe(200);
      expect(await admin()(tagPath, { method: 'DELETE' })).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden' },
      });
      expect((await admin()(`/projects/${API}/jobs/${FAILED_JOB}/retry`, { method: 'POST' })).status).toBe(403);
      expect(sandbox.state.repositories.get(REPOSITORY)?.tags.has('old')).toBe(true);

      expect((await control('/access', 'DELETE')).status).toBe(204);
      expect((await control('/access')).json).toEqual([]);
      expect((await admin()(tagPath, { method: 'DELETE' })).status).toBe(200);
      expect(sandbox.state.repositories.get(REPOSITORY)?.tags.has('old')).toBe(false);
    });

    it('overrides a group exactly: the group is hidden, the projects inside keep their own access', async () => {
      await control('/access', 'POST', { user: 'alice', group: 'acme', level: 0 });
      expect(await alice()('/groups/acme')).toMatchObject(notFound('Group'));
      // The subgroup still inherits alice's membership of acme, which the override does not change.
      expect(ids(await alice()('/groups'))).toEqual([11]);
      expect(ids(await alice()('/namespaces'))).not.toContain(10);
      expect((await alice()(`/projects/${API}`)).status).toBe(200);

      await control('/access', 'POST', { user: 'root', group: 10, level: 40 });
      expect((await admin()('/groups/10')).status).toBe(200);
      expect(await admin()('/groups/10/export', { method: 'POST' })).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden' },
      });
    });

    it('refuses bad bodies and answers 404 for unknown users, projects and groups', async () => {
      for (const body of [
        { user: 'root', project: API, level: 15 },
        { user: 'root', project: API, group: 10, level: 0 },
        { user: 'root', level: 0 },
        { user: 'root', project: API, level: 0, extra: true },
      ]) {
        const refused = await control('/access', 'POST', body);
        expect(refused.status).toBe(400);
        expect(refused.json).toEqual({ error: expect.any(String) });
      }
      expect(await control('/access', 'POST', { user: 'nobody', project: API, level: 0 })).toMatchObject(
        notFound('User'),
      );
      expect(await control('/access', 'POST', { user: 'root', project: 'acme/nope', level: 0 })).toMatchObject(
        notFound('Project'),
      );
      expect(await control('/access', 'POST', { user: 'root', group: 999, level: 0 })).toMatchObject(notFound('Group'));
      expect(sandbox.state.accessOverrides.list()).toEqual([]);
    });

    it('goes with the project it names when that project is deleted', async () => {
      await control('/access', 'POST', { user: 'root', project: API, level: 20 });
      await control(`/projects/${API}`, 'DELETE');
      expect((await control('/access')).json).toEqual([]);
    });
  });
});
