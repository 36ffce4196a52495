import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { generateEd25519PublicKey, parseSshPublicKey } from '../../src/sandbox/ssh-key';
import { apiClient } from '../support/sandbox-http';
import {
  ADMIN_TOKEN,
  aProject,
  baseWorld,
  MAINTAINER_TOKEN,
  OUTSIDER_TOKEN,
  USER_TOKEN,
} from '../support/world-builders';

describe('sandbox forge: users, keys, namespaces and access requests', () => {
  let sandbox: RunningSandbox;
  const admin = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, ADMIN_TOKEN);
  const alice = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, USER_TOKEN);
  const mia = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, MAINTAINER_TOKEN);
  const olaf = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, OUTSIDER_TOKEN);
  const deployKey = generateEd25519PublicKey('release');

  beforeEach(async () => {
    const world = baseWorld();
    sandbox = await startSandbox({
      world: {
        ...world,
        users: [
          ...(world.users ?? []),
          { id: 5, username: 'bot', name: 'Alert Bot', user_type: 'alert_bot' },
          { id: 6, username: 'ext', name: 'External Ed', external: true, two_factor: true },
          { id: 7, username: 'gone', name: 'Blocked Bea', state: 'blocked', custom_attributes: { team: 'red' } },
        ],
        groups: [
          {
            id: 10,
            path: 'acme',
            members: [
              { user: 'mia', access_level: 'owner' },
              { user: 'alice', access_level: 'developer' },
            ],
            access_requests: [{ user: 'olaf', requested_at: '2025-06-01T00:00:00Z' }],
          },
        ],
        projects: [aProject('api', { id: 1, access_requests: [{ user: 'ext' }] }), aProject('web', { id: 2 })],
        deploy_keys: [
          { id: 50, title: 'release', key: deployKey, projects: [{ project: 'acme/api', can_push: true }] },
        ],
      },
    });
  });
  afterEach(() => sandbox.close());

  describe('users', () => {
    it('shows the administrator view only to administrators', async () => {
      const asAdmin = (await admin()('/users/3')).json as Record<string, unknown>;
      expect(asAdmin).toMatchObject({
        id: 3,
        username: 'alice',
        email: 'alice@acme.test',
        is_admin: false,
        two_factor_enabled: false,
        external: false,
      });
      expect(asAdmin).toHaveProperty('confirmed_at');
      const asUser = (await olaf()('/users/3')).json as Record<string, unknown>;
      expect(asUser).toMatchObject({ id: 3, username: 'alice', bot: false });
      for (const field of ['email', 'two_factor_enabled', 'external', 'confirmed_at', 'is_admin'])
        expect(asUser).not.toHaveProperty(field);
      const list = (await olaf()('/users?per_page=100')).json as Record<string, unknown>[];
      expect(Object.keys(list[0]).sort()).toEqual(['avatar_url', 'id', 'name', 'state', 'username', 'web_url']);
    });

    it('filters the list', async () => {
      const ids = async (query: string, client = admin()): Promise<number[]> =>
        ((await client(`/users?${query}`)).json as { id: number }[]).map((u) => u.id);
      expect(await ids('')).toEqual([7, 6, 5, 4, 3, 2, 1]);
      expect(await ids('username=ALICE')).toEqual([3]);
      expect(await ids('search=acme.test')).toEqual([3, 2, 1]);
      expect(await ids('blocked=true')).toEqual([7]);
      expect(await ids('external=true')).toEqual([6]);
      expect(await ids('exclude_external=true&exclude_internal=true&active=true')).toEqual([4, 3, 2, 1]);
      expect(await ids('two_factor=enabled')).toEqual([6]);
      expect(await ids('admins=true')).toEqual([1]);
      expect(await ids('without_projects=true')).toEqual([7, 6, 5, 4, 1]);
      expect(await ids('custom_attributes[team]=red')).toEqual([7]);
      expect(await ids('order_by=username&sort=asc')).toEqual([3, 5, 6, 7, 2, 4, 1]);
      // Administrator filters are ignored for others.
      expect(await ids('two_factor=enabled', olaf())).toEqual([7, 6, 5, 4, 3, 2, 1]);
      expect((await olaf()('/users?extern_uid=1&provider=ldap')).status).toBe(403);
      expect((await admin()('/users?order_by=shoe_size')).json).toEqual({
        error: 'order_by does not have a valid value',
      });
    });

    it('answers /user for the caller, with sudo for administrators', async () => {
      expect((await alice()('/user')).json).toMatchObject({
        username: 'alice',
        email: 'alice@acme.test',
        two_factor_enabled: false,
      });
      expect((await alice()('/user')).json).not.toHaveProperty('is_admin');
      expect((await admin()('/user')).json).toMatchObject({ username: 'root', is_admin: true });
      expect((await admin()('/user?sudo=alice')).json).toMatchObject({ username: 'alice' });
      expect((await alice()('/user?sudo=root')).json).toEqual({ message: '403 Forbidden - Must be admin to use sudo' });
    });
  });

  describe('namespaces', () => {
    it('lists what the caller may see, searches and checks existence', async () => {
      const paths = async (client: ReturnType<typeof apiClient>, query = ''): Promise<string[]> =>
        ((await client(`/namespaces${query}`)).json as { full_path: string }[]).map((n) => n.full_path);
      // Ordered by id: personal namespaces take the ids below the group's explicit 10.
      expect(await paths(alice())).toEqual(['alice', 'acme']);
      expect(await paths(olaf())).toEqual(['olaf']);
      expect(await paths(admin(), '?search=ac')).toEqual(['acme']);
      expect(await paths(mia(), '?owned_only=true')).toEqual(['mia', 'acme']);
      expect(await paths(alice(), '?owned_only=true')).toEqual(['alice']);
      expect((await olaf()('/namespaces/acme')).json).toEqual({ message: '404 Namespace Not Found' });
      expect((await alice()('/namespaces/10')).json).toMatchObject({ full_path: 'acme', kind: 'group' });
      expect((await alice()('/namespaces/acme/exists')).json).toEqual({ exists: true, suggests: ['acme1'] });
      expect((await alice()('/namespaces/nova/exists')).json).toEqual({ exists: false, suggests: [] });
      expect((await alice()('/namespaces/acme/exists?parent_id=10')).json).toEqual({ exists: false, suggests: [] });
    });
  });

  describe('SSH keys', () => {
    it('creates, lists, shows and deletes my keys, keeping expires_at', async () => {
      const key = generateEd25519PublicKey('laptop');
      const created = await alice()('/user/keys', {
        method: 'POST',
        body: { title: 'laptop', key, expires_at: '2026-01-01T00:00:00Z' },
      });
      expect(created.status).toBe(201);
      const id = (created.json as { id: number }).id;
      expect(created.json).toMatchObject({ title: 'laptop', key, expires_at: '2026-01-01T00:00:00.000Z' });
      expect(sandbox.state.sshKeys.get(id)?.fingerprint_sha256).toBe(parseSshPublicKey(key)?.fingerprintSha256);
      expect((await alice()('/user/keys')).json).toMatchObject([{ id, title: 'laptop' }]);
      expect((await admin()('/users/alice/keys')).json).toMatchObject([{ id }]);
      expect((await alice()(`/user/keys/${id}`)).json).toMatchObject({ id });
      expect((await alice()(`/user/keys/${id}`, { method: 'DELETE' })).status).toBe(204);
      expect((await alice()(`/user/keys/${id}`)).json).toEqual({ message: '404 Key Not Found' });
    });

    it('rejects garbage key text and duplicates with the forge validation body', async () => {
      const garbage = await alice()('/user/keys', { method: 'POST', body: { title: 'x', key: 'not a key' } });
      expect(garbage.status).toBe(400);
      expect(garbage.json).toEqual({
        message: { key: [expect.any(String)], fingerprint: ['cannot be generated'] },
      });
      const key = generateEd25519PublicKey();
      expect((await alice()('/user/keys', { method: 'POST', body: { title: 'a', key } })).status).toBe(201);
      const duplicate = await admin()('/users/1/keys', { method: 'POST', body: { title: 'b', key } });
      expect(duplicate).toMatchObject({ status: 400, json: { message: { fingerprint: ['has already been taken'] } } });
      const missing = await alice()('/user/keys', { method: 'POST', body: {} });
      expect(missing.json).toEqual({ error: 'title is missing, key is missing' });
    });

    it("lets only administrators write another user's keys", async () => {
      const key = generateEd25519PublicKey();
      expect((await alice()('/users/4/keys', { method: 'POST', body: { title: 'x', key } })).status).toBe(403);
      const created = await admin()('/users/4/keys', { method: 'POST', body: { title: 'x', key } });
      expect(created.status).toBe(201);
      const id = (created.json as { id: number }).id;
      expect((await admin()(`/users/4/keys/${id}`, { method: 'DELETE' })).status).toBe(204);
      expect([...sandbox.state.sshKeys.values()].filter((k) => k.user_id === 4)).toEqual([]);
    });
  });

  describe('deploy keys', () => {
    it('enables one key on a second project and removes it project by project', async () => {
      const enable = await mia()('/projects/acme%2Fweb/deploy_keys/50/enable', { method: 'POST' });
      expect(enable.status).toBe(201);
      expect(enable.json).toMatchObject({ id: 50, title: 'release', key: deployKey });
      expect((await mia()('/projects/2/deploy_keys')).json).toMatchObject([{ id: 50, can_push: false }]);
      expect((await mia()('/projects/1/deploy_keys/50')).json).toMatchObject({ id: 50, can_push: true });
      const instance = (await admin()('/deploy_keys')).json as Record<string, unknown>[];
      expect(instance[0]).not.toHaveProperty('can_push');
      expect(instance[0]).toMatchObject({
        projects_with_write_access: [{ id: 1 }],
        projects_with_readonly_access: [{ id: 2 }],
      });

      expect((await mia()('/projects/1/deploy_keys/50', { method: 'DELETE' })).status).toBe(204);
      expect(sandbox.state.deployKeys.has(50)).toBe(true);
      expect((await mia()('/projects/2/deploy_keys/50', { method: 'DELETE' })).status).toBe(204);
      expect(sandbox.state.deployKeys.has(50)).toBe(false);
    });

    it('creates and edits a key; the same key text joins the existing key', async () => {
      const key = generateEd25519PublicKey('ci');
      const created = await mia()('/projects/1/deploy_keys', {
        method: 'POST',
        body: { title: 'ci', key, can_push: true, expires_at: '2026-03-01T00:00:00Z' },
      });
      expect(created).toMatchObject({
        status: 201,
        json: { title: 'ci', can_push: true, expires_at: '2026-03-01T00:00:00.000Z' },
      });
      const id = (created.json as { id: number }).id;
      const again = await mia()('/projects/2/deploy_keys', { method: 'POST', body: { title: 'ci', key } });
      expect(again.json).toMatchObject({ id, can_push: false });
      const edited = await mia()(`/projects/2/deploy_keys/${id}`, {
        method: 'PUT',
        body: { title: 'ci-2', can_push: true },
      });
      expect(edited.json).toMatchObject({ id, title: 'ci-2', can_push: true });
      const garbage = await mia()('/projects/1/deploy_keys', { method: 'POST', body: { title: 'x', key: 'garbage' } });
      expect(garbage.status).toBe(400);
      expect((await alice()('/projects/1/deploy_keys')).status).toBe(403);
    });
  });

  describe('access requests', () => {
    it('approving creates a member at the requested level (default 30)', async () => {
      expect((await mia()('/groups/acme/access_requests')).json).toMatchObject([
        { id: 4, username: 'olaf', requested_at: '2025-06-01T00:00:00.000Z' },
      ]);
      const approve = await mia()('/groups/acme/access_requests/4/approve', {
        method: 'PUT',
        body: { access_level: 20 },
      });
      expect(approve).toMatchObject({ status: 200, json: { id: 4, username: 'olaf', access_level: 20 } });
      expect(sandbox.state.member('group', 10, 4)?.access_level).toBe(20);
      expect((await mia()('/groups/acme/access_requests')).json).toEqual([]);
      // olaf now sees the group's projects.
      expect((await olaf()('/projects/acme%2Fapi/jobs')).status).toBe(200);

      const project = await mia()('/projects/1/access_requests/6/approve', { method: 'PUT' });
      expect(project.json).toMatchObject({ id: 6, access_level: 30 });
      expect(sandbox.state.member('project', 1, 6)?.access_level).toBe(30);
    });

    it('requests, denies and refuses', async () => {
      const request = await olaf()('/projects/acme%2Fweb/access_requests', { method: 'POST' });
      // olaf cannot see the private project, so he cannot ask either.
      expect(request.status).toBe(404);
      const own = await alice()('/groups/acme/access_requests', { method: 'POST' });
      expect(own.status).toBe(403);
      expect((await mia()('/projects/1/access_requests/6', { method: 'DELETE' })).status).toBe(204);
      expect(sandbox.state.accessRequests.filter((r) => r.source === 'project')).toEqual([]);
      expect((await mia()('/projects/1/access_requests/6/approve', { method: 'PUT' })).json).toEqual({
        message: '404 Not found',
      });
      const owner = await mia()('/groups/acme/access_requests/4/approve', {
        method: 'PUT',
        body: { access_level: 60 },
      });
      expect(owner.json).toEqual({ message: { access_level: ['is not included in the list'] } });
      expect((await alice()('/groups/acme/access_requests')).status).toBe(403);
    });
  });
});
