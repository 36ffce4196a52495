import { isAdminView } from '../../src/gitlab/types/users';
import type { AccessRequestsSnapshot } from '../../src/policies/access-requests/access-requests.decide';
import { observeAccessRequests } from '../../src/policies/access-requests/access-requests.observer';
import type { AccessRequestsConfig } from '../../src/policies/access-requests/access-requests.schema';
import { aPolicy } from '../support/builders/access-requests';
import { usePolicySandbox } from '../support/policy-sandbox';
import { ADMIN_TOKEN, aProject, baseWorld, MAINTAINER_TOKEN, manyUsers, USER_TOKEN } from '../support/world-builders';

/**
 * Group acme (10, mia owner) with 130 requests (more than a page of 100) from user001…user130, and bob's; project
 * acme/api (1) with requests from bob and user001; group beta (11) without requests.
 */
function world() {
  const users = manyUsers(130);
  const base = baseWorld();
  return baseWorld({
    users: [...(base.users ?? []), ...users, { id: 500, username: 'bob', email: 'bob@acme.com', two_factor: true }],
    groups: [
      {
        id: 10,
        path: 'acme',
        members: [
          { user: 'mia', access_level: 'owner' },
          { user: 'alice', access_level: 'developer' },
        ],
        access_requests: [
          ...users.map((u, i) => ({ user: u.username, requested_at: `now-${i + 1}h` })),
          { user: 'bob', requested_at: 'now-3d' },
        ],
      },
      { id: 11, path: 'beta', members: [{ user: 'mia', access_level: 'owner' }] },
    ],
    projects: [
      aProject('api', {
        id: 1,
        access_requests: [
          { user: 'bob', requested_at: 'now-2d' },
          { user: 'user001', requested_at: 'now-1d' },
        ],
      }),
    ],
  });
}

describe('access_requests observer, against the sandbox forge', () => {
  const forge = usePolicySandbox({ world, token: ADMIN_TOKEN });

  const observe = (config: AccessRequestsConfig, token: string): Promise<AccessRequestsSnapshot> =>
    observeAccessRequests(config, forge.context({ client: forge.clientWith(token), mode: 'plan' }));
  const gets = (pattern: RegExp) =>
    forge.sandbox.state.requestLog.filter((r) => r.method === 'GET' && pattern.test(r.path));
  const config = aPolicy({ groups: ['acme', 'beta', 'acme'], projects: ['acme/api'] });

  it('reads every pending request of every group and project, page after page, each source once', async () => {
    const snapshot = await observe(config, ADMIN_TOKEN);
    expect(snapshot.sources.map((s) => [s.kind, s.ref, s.requests.length])).toEqual([
      ['group', 'acme', 131],
      ['group', 'beta', 0],
      ['project', 'acme/api', 2],
    ]);
    expect(snapshot.sources[2].requests.map((r) => r.username)).toEqual(['bob', 'user001']);
    expect(snapshot.sources[2].requests[0]).toEqual({
      id: 500,
      username: 'bob',
      state: 'active',
      requested_at: expect.any(String),
    });
    // acme twice in the file, read once: two pages of 100.
    expect(gets(/^\/api\/v4\/groups\/acme\/access_requests$/).map((r) => r.query.page ?? '1')).toEqual(['1', '2']);
  });

  it('with an administrator’s token: knows it, and reads each requester’s administrator view once', async () => {
    const snapshot = await observe(config, ADMIN_TOKEN);
    expect(snapshot.admin).toBe(true);
    expect(snapshot.users.size).toBe(131);
    const bob = snapshot.users.get(500);
    expect(bob && isAdminView(bob)).toBe(true);
    expect(bob).toMatchObject({
      email: 'bob@acme.com',
      two_factor_enabled: true,
      external: false,
      confirmed_at: expect.any(String),
    });
    // bob and user001 asked to join both acme and acme/api: still one read each.
    const reads = gets(/^\/api\/v4\/users\/\d+$/).map((r) => r.path);
    expect(reads).toHaveLength(131);
    expect(new Set(reads).size).toBe(131);
    expect(gets(/^\/api\/v4\/user$/)).toHaveLength(1);
  });

  it('with an ordinary (owner) token: knows it is no administrator’s, and gets the public view', async () => {
    const snapshot = await observe(config, MAINTAINER_TOKEN);
    expect(snapshot.admin).toBe(false);
    const bob = snapshot.users.get(500);
    expect(bob).toMatchObject({ id: 500, username: 'bob', state: 'active', bot: false });
    expect(bob && isAdminView(bob)).toBe(false);
    expect(bob).not.toHaveProperty('email');
    expect(bob).not.toHaveProperty('two_factor_enabled');
  });

  it('records a requester the forge no longer knows as null', async () => {
    forge.sandbox.state.users.delete(500);
    const snapshot = await observe(aPolicy({ groups: undefined, projects: ['acme/api'] }), ADMIN_TOKEN);
    expect(snapshot.users.get(500)).toBeNull();
    expect(snapshot.users.size).toBe(2);
    expect([...snapshot.users.values()].flatMap((user) => (user ? [user.username] : []))).toEqual(['user001']);
  });

  it('leaves out, and names, each group and project whose requests the token may not manage, rather than fail the others', async () => {
    const context = forge.context({ client: forge.clientWith(USER_TOKEN), mode: 'plan' });
    const snapshot = await observeAccessRequests(config, context);
    expect(snapshot.sources).toEqual([]);
    expect(context.unobserved.list().map((unread) => unread.target)).toEqual([
      'group acme',
      'group beta',
      'project acme/api',
    ]);
    expect(context.unobserved.list()[0].reason).toMatch(/403/);
  });

  it('reads no user when nothing is pending', async () => {
    const snapshot = await observe(aPolicy({ groups: ['beta'] }), ADMIN_TOKEN);
    expect(snapshot.sources).toEqual([{ kind: 'group', ref: 'beta', requests: [] }]);
    expect(snapshot.users.size).toBe(0);
    expect(gets(/^\/api\/v4\/users\//)).toHaveLength(0);
  });
});
