import { request } from 'undici';
import { type World } from '../../src/sandbox';
import {
  acmeGroup,
  ADMIN_TOKEN,
  apiProject,
  baseWorld,
  MAINTAINER_TOKEN,
  OUTSIDER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';
import {
  ConflictError,
  ForbiddenError,
  GitlabClient,
  NotFoundError,
  type ProtectedBranch,
  type ProtectedBranchAccess,
  type ProtectedBranchAccessLevel,
  UnauthorizedError,
  ValidationError,
} from '../../src/gitlab';
import { DEFAULT_RETRY_OPTIONS } from '../../src/gitlab/transport/retry';
import { collect, useSandboxClients } from '../support/sandbox-clients';

/** Protected branches through the client against the sandbox over real HTTP. */

const MIA = 2;
const ALICE = 3;
const OLAF = 4;
const PARTNERS = 20;
const MAIN = 300;
const RELEASES = 301;

function world(): World {
  return baseWorld({
    groups: [acmeGroup(), { id: PARTNERS, path: 'partners', name: 'Partners' }],
    projects: [
      apiProject({
        shared_with_groups: ['partners'],
        protected_branches: [
          { id: MAIN, name: 'main', push_access_level: 'no_access', merge_access_level: 'maintainer' },
          {
            id: RELEASES,
            name: 'release/*',
            push_access_level: 30,
            allowed_to_merge: [{ user: 'alice' }, { group: 'partners' }],
            allow_force_push: true,
          },
        ],
      }),
      webProject(),
    ],
  });
}

const level = (access_level: ProtectedBranchAccessLevel, access_level_description: string): ProtectedBranchAccess => ({
  access_level,
  access_level_description,
  user_id: null,
  group_id: null,
});

describe('GitlabClient protected branches against the sandbox', () => {
  const forge = useSandboxClients(world);
  const client = (token?: string): GitlabClient => forge.client(token);

  async function logged(method: string): Promise<{ path: string; status: number; query: Record<string, string> }[]> {
    const response = await request(`${forge.sandbox.url}/__sandbox/requests?method=${method}&path=protected_branches`);
    return (await response.body.json()) as { path: string; status: number; query: Record<string, string> }[];
  }

  it('lists the world’s protected branches with their access levels, and filters with `search`', async () => {
    const alice = client(USER_TOKEN);
    const all = await collect(alice.protectedBranches.all('acme/api'));
    expect(all).toEqual<ProtectedBranch[]>([
      {
        id: MAIN,
        name: 'main',
        push_access_levels: [level(0, 'No one')],
        merge_access_levels: [level(40, 'Maintainers')],
        unprotect_access_levels: [level(40, 'Maintainers')],
        allow_force_push: false,
        code_owner_approval_required: false,
      },
      {
        id: RELEASES,
        name: 'release/*',
        push_access_levels: [level(30, 'Developers + Maintainers')],
        merge_access_levels: [
          level(40, 'Maintainers'),
          { access_level: null, access_level_description: 'Alice Developer', user_id: ALICE, group_id: null },
          { access_level: null, access_level_description: 'Partners', user_id: null, group_id: PARTNERS },
        ],
        unprotect_access_levels: [level(40, 'Maintainers')],
        allow_force_push: true,
        code_owner_approval_required: false,
      },
    ]);
    expect((await collect(alice.protectedBranches.all(1, { search: 'REL' }))).map((b) => b.name)).toEqual([
      'release/*',
    ]);
    expect(await collect(alice.protectedBranches.all(1, { search: 'nothing' }))).toEqual([]);
    expect(await collect(alice.protectedBranches.all('acme/web'))).toEqual([]);
    expect((await logged('GET'))[1].query.search).toBe('REL');
  });

  it('shows a branch and a wildcard, the name sent URL-encoded as one segment', async () => {
    const alice = client(USER_TOKEN);
    expect((await alice.protectedBranches.show('acme/api', 'main')).id).toBe(MAIN);
    const wildcard = await alice.protectedBranches.show('acme/api', 'release/*');
    expect(wildcard.id).toBe(RELEASES);
    expect((await logged('GET')).map((r) => r.path)).toEqual([
      '/api/v4/projects/acme%2Fapi/protected_branches/main',
      '/api/v4/projects/acme%2Fapi/protected_branches/release%2F*',
    ]);
    // A wildcard name matches only itself, not the branches it covers.
    await expect(alice.protectedBranches.show(1, 'release/1.0')).rejects.toThrow(NotFoundError);
    const missing = await alice.protectedBranches.show(1, 'develop').catch((e: unknown) => e);
    expect((missing as NotFoundError).body).toEqual({ message: '404 Not found' });
  });

  it('protects with defaults (201) and with every parameter; a second protect of the same name is 409', async () => {
    const mia = client(MAINTAINER_TOKEN);
    const plain = await mia.protectedBranches.protect('acme/web', { name: 'main' });
    expect(plain).toEqual({
      id: expect.any(Number),
      name: 'main',
      push_access_levels: [level(40, 'Maintainers')],
      merge_access_levels: [level(40, 'Maintainers')],
      unprotect_access_levels: [level(40, 'Maintainers')],
      allow_force_push: false,
      code_owner_approval_required: false,
    });
    expect(plain.id).toBeGreaterThan(RELEASES);

    const full = await mia.protectedBranches.protect(1, {
      name: 'hotfix/*',
      push_access_level: 30,
      merge_access_level: 60,
      unprotect_access_level: 60,
      allow_force_push: true,
      allowed_to_push: [{ user_id: MIA }, { group_id: PARTNERS }],
      allowed_to_merge: [{ access_level: 40 }],
      code_owner_approval_required: true,
    });
    expect(full.push_access_levels).toEqual([
      level(30, 'Developers + Maintainers'),
      { access_level: null, access_level_description: 'Mia Maintainer', user_id: MIA, group_id: null },
      { access_level: null, access_level_description: 'Partners', user_id: null, group_id: PARTNERS },
    ]);
    expect(full.merge_access_levels).toEqual([level(60, 'Admins'), level(40, 'Maintainers')]);
    expect(full.unprotect_access_levels).toEqual([level(60, 'Admins')]);
    expect(full).toMatchObject({ name: 'hotfix/*', allow_force_push: true, code_owner_approval_required: true });

    // Only `allowed_to_*` given: no default level entry besides it.
    const onlyUsers = await mia.protectedBranches.protect(1, {
      name: 'staging',
      allowed_to_push: [{ user_id: ALICE }],
    });
    expect(onlyUsers.push_access_levels.map((a) => a.user_id)).toEqual([ALICE]);
    expect(await mia.protectedBranches.show(1, 'hotfix/*')).toEqual(full);

    const conflict = await mia.protectedBranches.protect(1, { name: 'main' }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect((conflict as ConflictError).body).toEqual({ message: "Protected branch 'main' already exists" });
    expect((await logged('POST')).map((r) => r.status)).toEqual([201, 201, 201, 409]);
  });

  it('sends a protect again after a lost answer, since the forge refuses a second one with 409: one protection, never two', async () => {
    const mia = forge.client(MAINTAINER_TOKEN, { retry: { ...DEFAULT_RETRY_OPTIONS } });
    // The forge protects main, and the answer is lost on the way (a proxy's 502): the client sends it again.
    const fault = await request(`${forge.sandbox.url}/__sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ method: 'POST', path: '/protected_branches$', sequence: [{ status: 502, after: true }] }),
    });
    expect(fault.statusCode).toBe(201);
    const answer = await mia.protectedBranches.protect('acme/web', { name: 'main' }).catch((error: unknown) => error);
    // The repeat meets the protection the first one made: the caller sees the 409, which says it is in place.
    expect(answer).toBeInstanceOf(ConflictError);
    expect((await logged('POST')).map((entry) => entry.status)).toEqual([502, 409]);
    expect(
      [...forge.sandbox.state.protectedBranches.values()].filter(
        (branch) => branch.project_id === 2 && branch.name === 'main',
      ),
    ).toHaveLength(1);
  });

  it('rejects invalid access levels (400 parameter error) and users or groups without access (400 validation)', async () => {
    const mia = client(MAINTAINER_TOKEN);
    const bad = await mia.protectedBranches
      .protect(1, { name: 'x', push_access_level: 20 as 30 })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).body).toEqual({ error: 'push_access_level does not have a valid value' });

    const outsider = await mia.protectedBranches
      .protect(1, { name: 'x', allowed_to_push: [{ user_id: OLAF }] })
      .catch((e: unknown) => e);
    expect((outsider as ValidationError).fields).toEqual({
      'push_access_levels.user': ['is not a member of the project'],
    });

    const notShared = await mia.protectedBranches
      .protect(1, { name: 'x', allowed_to_unprotect: [{ group_id: 10 }] })
      .catch((e: unknown) => e);
    expect((notShared as ValidationError).fields).toEqual({
      'unprotect_access_levels.group': ['does not have access to the project'],
    });

    const noName = await mia.protectedBranches.protect(1, { name: '' }).catch((e: unknown) => e);
    expect((noName as ValidationError).body).toEqual({ error: 'name is missing' });
    expect((await collect(mia.protectedBranches.all(1))).map((b) => b.name)).toEqual(['main', 'release/*']);
  });

  it('patches code_owner_approval_required (omitted means false) and unprotects (204)', async () => {
    const mia = client(MAINTAINER_TOKEN);
    const on = await mia.protectedBranches.edit(1, 'release/*', { code_owner_approval_required: true });
    expect(on).toMatchObject({ id: RELEASES, code_owner_approval_required: true, allow_force_push: true });
    expect((await mia.protectedBranches.show(1, 'release/*')).code_owner_approval_required).toBe(true);
    expect((await mia.protectedBranches.edit(1, 'release/*', {})).code_owner_approval_required).toBe(false);
    await expect(mia.protectedBranches.edit(1, 'nope', { code_owner_approval_required: true })).rejects.toThrow(
      NotFoundError,
    );

    await mia.protectedBranches.unprotect(1, 'release/*');
    await expect(mia.protectedBranches.show(1, 'release/*')).rejects.toThrow(NotFoundError);
    await expect(mia.protectedBranches.unprotect(1, 'release/*')).rejects.toThrow(NotFoundError);
    expect((await logged('DELETE')).map((r) => [r.path, r.status])).toEqual([
      ['/api/v4/projects/1/protected_branches/release%2F*', 204],
      ['/api/v4/projects/1/protected_branches/release%2F*', 404],
    ]);
    // Unprotected, the name can be protected again.
    expect((await mia.protectedBranches.protect(1, { name: 'release/*' })).name).toBe('release/*');
  });

  it('answers 401 without a token, 404 to outsiders of a private project, 403 to developers who write', async () => {
    await expect(client('glpat-nobody').protectedBranches.all(1).next()).rejects.toThrow(UnauthorizedError);
    await expect(client(OUTSIDER_TOKEN).protectedBranches.show(1, 'main')).rejects.toThrow(NotFoundError);
    await expect(client(ADMIN_TOKEN).protectedBranches.all('acme/nope').next()).rejects.toThrow(NotFoundError);

    const alice = client(USER_TOKEN);
    await expect(alice.protectedBranches.protect(1, { name: 'dev' })).rejects.toThrow(ForbiddenError);
    await expect(alice.protectedBranches.edit(1, 'main', { code_owner_approval_required: true })).rejects.toThrow(
      ForbiddenError,
    );
    await expect(alice.protectedBranches.unprotect(1, 'main')).rejects.toThrow(ForbiddenError);
    expect(forge.sandbox.state.protectedBranches.size).toBe(2);
  });

  it('pages through many protected branches', async () => {
    const admin = client(ADMIN_TOKEN);
    for (let i = 0; i < 103; i++) await admin.protectedBranches.protect('acme/web', { name: `b-${i}` });
    const all = await collect(admin.protectedBranches.all('acme/web'));
    expect(all).toHaveLength(103);
    expect((await logged('GET')).length).toBe(2);
  });
});
