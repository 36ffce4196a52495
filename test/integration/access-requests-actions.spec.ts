import { NotFoundError } from '../../src/gitlab/transport/errors';
import { APPROVE, DENY } from '../../src/policies/access-requests/access-requests.decide';
import { accessRequestsType } from '../../src/policies/access-requests/access-requests.type';
import { usePolicySandbox } from '../support/policy-sandbox';
import { aProject, baseWorld, MAINTAINER_TOKEN } from '../support/world-builders';

/** Group acme (10, mia owner) and project acme/api (1), each with requests from bob (20) and carol (21). */
function world() {
  const base = baseWorld();
  return baseWorld({
    users: [...(base.users ?? []), { id: 20, username: 'bob' }, { id: 21, username: 'carol' }],
    groups: [
      {
        id: 10,
        path: 'acme',
        members: [{ user: 'mia', access_level: 'owner' }],
        access_requests: [{ user: 'bob' }, { user: 'carol' }],
      },
    ],
    projects: [aProject('api', { id: 1, access_requests: [{ user: 'bob' }, { user: 'carol' }] })],
  });
}

describe('access_requests actions, against the sandbox forge', () => {
  const forge = usePolicySandbox({ world, token: MAINTAINER_TOKEN });
  const context = () => forge.context();

  const members = () =>
    forge.sandbox.state.members
      .filter((m) => m.user_id >= 20)
      .map((m) => [m.source, m.source_id, m.user_id, m.access_level]);
  const pending = () => forge.sandbox.state.accessRequests.map((r) => [r.source, r.source_id, r.user_id]);

  it('approve makes the requester a member at the decided level, in a group (owner included) and in a project', async () => {
    await expect(
      accessRequestsType.actions[APPROVE].run(
        { source: 'group', id: 'acme', user_id: 20, access_level: 50 },
        context(),
      ),
    ).resolves.toEqual({ detail: 'member at access level 50' });
    await expect(
      accessRequestsType.actions[APPROVE].run({ source: 'project', id: 1, user_id: 21, access_level: 20 }, context()),
    ).resolves.toEqual({ detail: 'member at access level 20' });
    expect(members()).toEqual([
      ['group', 10, 20, 50],
      ['project', 1, 21, 20],
    ]);
    expect(pending()).toEqual([
      ['group', 10, 21],
      ['project', 1, 20],
    ]);
  });

  it('deny removes the request and grants nothing', async () => {
    await accessRequestsType.actions[DENY].run({ source: 'group', id: 10, user_id: 21 }, context());
    await accessRequestsType.actions[DENY].run({ source: 'project', id: 'acme/api', user_id: 20 }, context());
    expect(members()).toEqual([]);
    expect(pending()).toEqual([
      ['group', 10, 20],
      ['project', 1, 21],
    ]);
  });

  it('lets the 404 of a request handled meanwhile reach the executor, which counts it as gone', async () => {
    await accessRequestsType.actions[DENY].run({ source: 'group', id: 'acme', user_id: 20 }, context());
    await expect(
      accessRequestsType.actions[DENY].run({ source: 'group', id: 'acme', user_id: 20 }, context()),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      accessRequestsType.actions[APPROVE].run(
        { source: 'group', id: 'acme', user_id: 20, access_level: 30 },
        context(),
      ),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it.each([
    [
      'owner for a project',
      { source: 'project', id: 1, user_id: 20, access_level: 50 },
      'access_requests: action parameter "access_level" must be at most 40 for a project, got 50',
    ],
    [
      'an unknown level',
      { source: 'group', id: 'acme', user_id: 20, access_level: 60 },
      'access_requests: action parameter "access_level" must be one of 10, 20, 30, 40, 50, got 60',
    ],
    [
      'a missing user id',
      { source: 'group', id: 'acme', access_level: 30 },
      'access_requests: action parameter "user_id" must be an integer, got undefined',
    ],
    [
      'an unknown source',
      { source: 'user', id: 'acme', user_id: 20, access_level: 30 },
      'access_requests: action parameter "source" must be "group" or "project", got "user"',
    ],
  ])('refuses parameters it never decides (%s) without calling the forge', async (_title, params, message) => {
    await expect(accessRequestsType.actions[APPROVE].run(params, context())).rejects.toThrow(new TypeError(message));
    expect(forge.sandbox.state.requestLog.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(members()).toEqual([]);
  });
});
