import { request } from 'undici';
import { type World } from '../../src/sandbox';
import {
  ADMIN_TOKEN,
  BASE_NOW,
  baseWorld,
  MAINTAINER_TOKEN,
  OUTSIDER_TOKEN,
  USER_TOKEN,
} from '../support/world-builders';
import {
  ConflictError,
  ForbiddenError,
  GitlabClient,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
  type PublicUser,
} from '../../src/gitlab';
import { collect, useSandboxClients } from '../support/sandbox-clients';

/** Users' write side, status, preferences, follows and counts over real HTTP. */

const MIA = 2;
const ALICE = 3;
const OLAF = 4;

/** baseWorld with `mia` the only owner of `acme` (for the 409 on soft delete). */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    groups: (base.groups ?? []).map((g) => ({
      ...g,
      members: [
        { user: 'mia', access_level: 'owner' },
        { user: 'alice', access_level: 'developer' },
      ],
    })),
    users: (base.users ?? []).map((u) =>
      u.username === 'alice' ? { ...u, identities: [{ provider: 'ldapmain', extern_uid: 'uid=alice' }] } : u,
    ),
  };
}

describe('GitlabClient user writes against the sandbox', () => {
  const forge = useSandboxClients(world);
  const client = (token?: string): GitlabClient => forge.client(token);

  async function statuses(method: string, path: string): Promise<number[]> {
    const response = await request(
      `${forge.sandbox.url}/__sandbox/requests?method=${method}&path=${encodeURIComponent(path)}`,
    );
    return ((await response.body.json()) as { status: number }[]).map((r) => r.status);
  }

  it('creates a user (201, administrator view) and enforces the forge’s rules', async () => {
    const admin = client();
    const created = await admin.users.create({
      email: 'nina@acme.test',
      name: 'Nina New',
      username: 'nina',
      password: 'correct-horse',
      bio: 'hi',
      external: true,
      skip_confirmation: true,
      provider: 'ldapmain',
      extern_uid: 'uid=nina',
      private_profile: null,
      projects_limit: 5,
    });
    expect(created).toEqual(
      expect.objectContaining({
        username: 'nina',
        name: 'Nina New',
        email: 'nina@acme.test',
        is_admin: false,
        bio: 'hi',
        external: true,
        private_profile: false,
        projects_limit: 5,
        identities: [{ provider: 'ldapmain', extern_uid: 'uid=nina' }],
        commit_email: 'nina@acme.test',
      }),
    );
    // skip_confirmation confirms at creation.
    expect(created.confirmed_at).toBe(created.created_at);
    expect(forge.sandbox.state.users.get(created.id)?.username).toBe('nina');
    expect(await statuses('POST', '/users')).toEqual([201]);

    // Taken email or username: 409.
    await expect(
      admin.users.create({ email: 'NINA@acme.test', name: 'x', username: 'nina2', reset_password: true }),
    ).rejects.toThrow(ConflictError);
    await expect(
      admin.users.create({ email: 'other@acme.test', name: 'x', username: 'Nina', force_random_password: true }),
    ).rejects.toThrow(ConflictError);
    // The flags take priority over the password; a short password alone is a validation error.
    const short = await admin.users
      .create({ email: 's@acme.test', name: 's', username: 'short', password: 'abc' })
      .catch((e: unknown) => e);
    expect((short as ValidationError).fields).toEqual({ password: ['is too short (minimum is 8 characters)'] });
    // No password and no flag: a parameter error.
    const raw = await request(`${forge.sandbox.url}/api/v4/users`, {
      method: 'POST',
      headers: { 'private-token': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'p@acme.test', name: 'p', username: 'p' }),
    });
    expect(raw.statusCode).toBe(400);
    expect(await raw.body.json()).toEqual({
      error: 'password, reset_password, force_random_password are missing, at least one parameter must be provided',
    });
    const missing = await request(`${forge.sandbox.url}/api/v4/users`, {
      method: 'POST',
      headers: { 'private-token': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'p', username: 'p', reset_password: true }),
    });
    expect(await missing.body.json()).toEqual({ error: 'email is missing' });

    // Administrators only; without a token 401.
    await expect(
      client(USER_TOKEN).users.create({ email: 'a@b.c', name: 'a', username: 'abc', reset_password: true }),
    ).rejects.toThrow(ForbiddenError);
    await expect(
      client('nope').users.create({ email: 'a@b.c', name: 'a', username: 'abc', reset_password: true }),
    ).rejects.toThrow(UnauthorizedError);
  });

  it('edits a user (administrators), answering a taken email with 404 as the forge does', async () => {
    const admin = client();
    const edited = await admin.users.edit(ALICE, {
      name: 'Alice Renamed',
      bio: 'new bio',
      public_email: 'alice@acme.test',
      admin: true,
      view_diffs_file_by_file: true,
    });
    expect(edited).toEqual(
      expect.objectContaining({
        id: ALICE,
        name: 'Alice Renamed',
        bio: 'new bio',
        public_email: 'alice@acme.test',
        is_admin: true,
      }),
    );
    expect(forge.sandbox.state.userWrites.preferencesOf(ALICE).view_diffs_file_by_file).toBe(true);
    await expect(admin.users.edit(ALICE, { email: 'mia@acme.test' })).rejects.toThrow(NotFoundError);
    await expect(admin.users.edit(999, { name: 'x' })).rejects.toThrow(NotFoundError);
    const unverified = await admin.users.edit(OLAF, { public_email: 'someone@else.test' }).catch((e: unknown) => e);
    expect(unverified).toBeInstanceOf(ValidationError);
    expect((unverified as ValidationError).fields).toEqual({ public_email: ['is not an email you own'] });
    await expect(client(MAINTAINER_TOKEN).users.edit(OLAF, { name: 'x' })).rejects.toThrow(ForbiddenError);
    expect(forge.sandbox.state.users.get(OLAF)?.name).toBe('Olaf Outsider');
  });

  it('deletes an identity (204) and answers 404 for an unknown provider or user, 403 for non-admins', async () => {
    const admin = client();
    await expect(client(USER_TOKEN).users.removeIdentity(ALICE, 'ldapmain')).rejects.toThrow(ForbiddenError);
    await admin.users.removeIdentity(ALICE, 'ldapmain');
    expect(forge.sandbox.state.users.get(ALICE)?.identities).toEqual([]);
    await expect(admin.users.removeIdentity(ALICE, 'ldapmain')).rejects.toThrow(NotFoundError);
    await expect(admin.users.removeIdentity(999, 'ldapmain')).rejects.toThrow(NotFoundError);
    expect(await statuses('DELETE', 'identities')).toEqual([403, 204, 404, 404]);
  });

  it('deletes a user (204), 409 for a sole group owner unless hard_delete, which also removes the group', async () => {
    const admin = client();
    await expect(client(USER_TOKEN).users.remove(OLAF)).rejects.toThrow(ForbiddenError);
    await admin.users.remove(OLAF);
    expect(forge.sandbox.state.users.has(OLAF)).toBe(false);
    await expect(admin.users.remove(OLAF)).rejects.toThrow(NotFoundError);

    const conflict = await admin.users.remove(MIA).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect((conflict as ConflictError).body).toEqual({
      message: 'User cannot be removed while is the sole-owner of a group',
    });
    expect(forge.sandbox.state.users.has(MIA)).toBe(true);
    await admin.users.remove(MIA, { hard_delete: true });
    expect(forge.sandbox.state.users.has(MIA)).toBe(false);
    expect(forge.sandbox.state.groups.has(10)).toBe(false);
    expect(forge.sandbox.state.projects.size).toBe(0);
    expect(forge.sandbox.state.members.filter((m) => m.user_id === ALICE)).toEqual([]);
    expect(await statuses('DELETE', '/users/')).toEqual([403, 204, 404, 409, 204]);
  });

  it('sets, reads and clears statuses, with clear_status_after on the sandbox clock', async () => {
    const alice = client(USER_TOKEN);
    const empty = { emoji: null, availability: 'not_set', message: null, message_html: '', clear_status_at: null };
    expect(await alice.users.status()).toEqual(empty);

    const set = await alice.users.setStatus({ message: 'on <holiday>', clear_status_after: '1_day' });
    const clearAt = new Date(Date.parse(BASE_NOW) + 86_400_000);
    expect(set).toEqual({
      emoji: 'speech_balloon',
      availability: 'not_set',
      message: 'on <holiday>',
      message_html: 'on &lt;holiday&gt;',
      clear_status_at: expect.any(String),
    });
    // The sandbox clock runs from BASE_NOW, so allow the few milliseconds the test took.
    expect(Math.abs(Date.parse(set.clear_status_at ?? '') - clearAt.getTime())).toBeLessThan(5_000);
    // Another user's status by ID or username, for any caller.
    const olaf = client(OUTSIDER_TOKEN);
    expect(await olaf.users.status(ALICE)).toEqual(set);
    expect(await olaf.users.status('alice')).toEqual(set);
    await expect(olaf.users.status('nobody')).rejects.toThrow(NotFoundError);
    await expect(client('nope').users.status()).rejects.toThrow(UnauthorizedError);

    forge.sandbox.state.clock.advance(86_400_000 + 10_000);
    expect(await alice.users.status()).toEqual(empty);

    // Omitting clear_status_after clears the previously set expiry.
    await alice.users.setStatus({ emoji: 'coffee', clear_status_after: '30_minutes' });
    const kept = await alice.users.setStatus({ emoji: 'coffee', message: 'brb' });
    expect(kept).toEqual(expect.objectContaining({ emoji: 'coffee', message: 'brb', clear_status_at: null }));
    // Both empty clears it.
    expect(await alice.users.setStatus({ emoji: '', message: '' })).toEqual(empty);

    const bad = await request(`${forge.sandbox.url}/api/v4/user/status`, {
      method: 'PUT',
      headers: { 'private-token': USER_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'x', clear_status_after: '2_hours' }),
    });
    expect(bad.statusCode).toBe(400);
    expect(await bad.body.json()).toEqual({ error: 'clear_status_after does not have a valid value' });
  });

  it('edits preferences; the flag is required', async () => {
    const alice = client(USER_TOKEN);
    const prefs = await alice.users.editPreferences({ view_diffs_file_by_file: true });
    expect(prefs).toEqual({ id: expect.any(Number), user_id: ALICE, view_diffs_file_by_file: true });
    expect(await alice.users.editPreferences({ view_diffs_file_by_file: false })).toEqual({
      ...prefs,
      view_diffs_file_by_file: false,
    });
    const missing = await request(`${forge.sandbox.url}/api/v4/user/preferences`, {
      method: 'PUT',
      headers: { 'private-token': USER_TOKEN, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(missing.statusCode).toBe(400);
    expect(await missing.body.json()).toEqual({ error: 'view_diffs_file_by_file is missing' });
    await expect(client('nope').users.editPreferences({ view_diffs_file_by_file: true })).rejects.toThrow(
      UnauthorizedError,
    );
  });

  it('follows and unfollows, reflected in followers, following and the public view', async () => {
    const alice = client(USER_TOKEN);
    const olaf = client(OUTSIDER_TOKEN);
    const followed = await alice.users.follow(MIA);
    expect(followed).toEqual({
      id: MIA,
      username: 'mia',
      name: 'Mia Maintainer',
      state: 'active',
      avatar_url: expect.any(String),
      web_url: `${forge.sandbox.url}/mia`,
    });
    // Already following, or oneself: 304, nothing changes.
    expect(await alice.users.follow(MIA)).toBeUndefined();
    expect(await alice.users.follow(ALICE)).toBeUndefined();
    await olaf.users.follow(MIA);
    await expect(olaf.users.follow(999)).rejects.toThrow(NotFoundError);

    expect((await collect(olaf.users.followers(MIA))).map((u) => u.id)).toEqual([ALICE, OLAF]);
    expect((await collect(olaf.users.following(ALICE))).map((u) => u.id)).toEqual([MIA]);
    await expect(collect(olaf.users.followers(999))).rejects.toThrow(NotFoundError);
    const mia = (await olaf.users.show(MIA)) as PublicUser;
    expect([mia.followers, mia.following]).toEqual([2, 0]);

    expect(await alice.users.unfollow(MIA)).toEqual(followed);
    expect(await alice.users.unfollow(MIA)).toBeUndefined();
    expect((await collect(olaf.users.followers(MIA))).map((u) => u.id)).toEqual([OLAF]);
    expect(await statuses('POST', '/follow')).toEqual([201, 304, 304, 201, 404]);
    await expect(client('nope').users.follow(MIA)).rejects.toThrow(UnauthorizedError);
  });

  it('counts the caller’s merge requests and lets an administrator act as another user on GET /user', async () => {
    expect(await client(USER_TOKEN).users.counts()).toEqual({ merge_requests: 0 });
    await expect(client('nope').users.counts()).rejects.toThrow(UnauthorizedError);

    const asAlice = await client().users.current({ sudo: ALICE });
    expect(asAlice).toEqual(expect.objectContaining({ id: ALICE, username: 'alice' }));
    expect('is_admin' in asAlice).toBe(false);
    await expect(client(USER_TOKEN).users.current({ sudo: MIA })).rejects.toThrow(ForbiddenError);
    await expect(client().users.current({ sudo: 999 })).rejects.toThrow(NotFoundError);
  });
});
