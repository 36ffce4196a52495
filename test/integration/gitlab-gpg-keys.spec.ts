import { request } from 'undici';
import { type World } from '../../src/sandbox';
import { ADMIN_TOKEN, BASE_NOW, baseWorld, OUTSIDER_TOKEN, USER_TOKEN } from '../support/world-builders';
import { armoredGpgKey, GPG_KEY_INVALID, parseGpgPublicKey } from '../../src/sandbox/gpg-key';
import {
  ForbiddenError,
  GitlabClient,
  type GpgKey,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
} from '../../src/gitlab';
import { collect, useSandboxClients } from '../support/sandbox-clients';

/** GPG keys through the client against the sandbox over real HTTP. */

const ALICE = 3;
const OLAF = 4;
const ALICE_KEY = 501;

function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: (base.users ?? []).map((u) =>
      u.username === 'alice'
        ? { ...u, gpg_keys: [{ id: ALICE_KEY, key: armoredGpgKey('alice-1'), created_at: 'now-2d' }] }
        : u,
    ),
  };
}

describe('GitlabClient GPG keys against the sandbox', () => {
  const forge = useSandboxClients(world);
  const client = (token?: string): GitlabClient => forge.client(token);

  /** Statuses the sandbox answered, from its request log. */
  async function statuses(method: string): Promise<number[]> {
    const response = await request(`${forge.sandbox.url}/__sandbox/requests?method=${method}&path=gpg_keys`);
    return ((await response.body.json()) as { status: number }[]).map((r) => r.status);
  }

  it('lists and shows the caller’s keys with the documented fields only', async () => {
    const alice = client(USER_TOKEN);
    const keys = await collect(alice.gpgKeys.all());
    expect(keys).toEqual([
      {
        id: ALICE_KEY,
        key: armoredGpgKey('alice-1'),
        created_at: new Date(Date.parse(BASE_NOW) - 2 * 86_400_000).toISOString(),
      },
    ]);
    expect(await alice.gpgKeys.show(ALICE_KEY)).toEqual(keys[0]);
    // Another user's key is not the caller's.
    await expect(client(OUTSIDER_TOKEN).gpgKeys.show(ALICE_KEY)).rejects.toThrow(NotFoundError);
  });

  it('adds a key for the caller (201), with a stable fingerprint computed from the text, and deletes it (204)', async () => {
    const olaf = client(OUTSIDER_TOKEN);
    const text = armoredGpgKey('olaf-1');
    const created: GpgKey = await olaf.gpgKeys.create({ key: `${text}\n` });
    expect(created).toEqual({ id: expect.any(Number), key: text, created_at: expect.any(String) });
    expect(created.id).toBeGreaterThan(ALICE_KEY);
    const stored = forge.sandbox.state.gpgKeys.get(created.id);
    expect(stored?.user_id).toBe(OLAF);
    expect(stored?.fingerprint).toMatch(/^[0-9A-F]{40}$/);
    expect(stored?.primary_keyid).toBe(stored?.fingerprint.slice(-16));
    expect(parseGpgPublicKey(`  ${text}\n`)).toEqual(expect.objectContaining({ fingerprint: stored?.fingerprint }));

    // The same key text again: the fingerprint is taken, whoever adds it.
    const again = await client(USER_TOKEN)
      .gpgKeys.create({ key: text })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ValidationError);
    expect((again as ValidationError).status).toBe(400);
    expect((again as ValidationError).fields).toEqual({ fingerprint: ['has already been taken'] });

    expect((await collect(olaf.gpgKeys.all())).map((k) => k.id)).toEqual([created.id]);
    await olaf.gpgKeys.remove(created.id);
    expect(await collect(olaf.gpgKeys.all())).toEqual([]);
    await expect(olaf.gpgKeys.remove(created.id)).rejects.toThrow(NotFoundError);
    expect(await statuses('POST')).toEqual([201, 400]);
    expect(await statuses('DELETE')).toEqual([204, 404]);
  });

  it('rejects garbage with the forge’s validation shape and a missing key with a parameter error', async () => {
    const alice = client(USER_TOKEN);
    const garbage = await alice.gpgKeys.create({ key: 'ssh-ed25519 AAAA not a gpg key' }).catch((e: unknown) => e);
    expect(garbage).toBeInstanceOf(ValidationError);
    expect((garbage as ValidationError).fields).toEqual({ key: [GPG_KEY_INVALID] });

    const emptyBody = '-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!\n-----END PGP PUBLIC KEY BLOCK-----';
    const empty = await alice.gpgKeys.create({ key: emptyBody }).catch((e: unknown) => e);
    expect((empty as ValidationError).fields).toEqual({
      primary_keyid: ["can't be blank"],
      fingerprint: ["can't be blank"],
    });

    const missing = await request(`${forge.sandbox.url}/api/v4/user/gpg_keys`, {
      method: 'POST',
      headers: { 'private-token': USER_TOKEN, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(missing.statusCode).toBe(400);
    expect(await missing.body.json()).toEqual({ error: 'key is missing' });
    expect([...forge.sandbox.state.gpgKeys.keys()]).toEqual([ALICE_KEY]);
  });

  it('reads another user’s keys; only administrators add or delete them', async () => {
    const olaf = client(OUTSIDER_TOKEN);
    expect((await collect(olaf.gpgKeys.allForUser(ALICE))).map((k) => k.id)).toEqual([ALICE_KEY]);
    expect((await olaf.gpgKeys.showForUser(ALICE, ALICE_KEY)).key).toBe(armoredGpgKey('alice-1'));
    await expect(olaf.gpgKeys.showForUser(OLAF, ALICE_KEY)).rejects.toThrow(NotFoundError);
    await expect(olaf.gpgKeys.allForUser(999).next()).rejects.toThrow(NotFoundError);

    await expect(olaf.gpgKeys.createForUser(ALICE, { key: armoredGpgKey('x') })).rejects.toThrow(ForbiddenError);
    await expect(olaf.gpgKeys.removeForUser(ALICE, ALICE_KEY)).rejects.toThrow(ForbiddenError);

    const admin = client(ADMIN_TOKEN);
    const added = await admin.gpgKeys.createForUser(ALICE, { key: armoredGpgKey('alice-2') });
    expect((await collect(client(USER_TOKEN).gpgKeys.all())).map((k) => k.id)).toEqual([ALICE_KEY, added.id]);
    await expect(admin.gpgKeys.createForUser(999, { key: armoredGpgKey('y') })).rejects.toThrow(NotFoundError);
    await admin.gpgKeys.removeForUser(ALICE, ALICE_KEY);
    await expect(admin.gpgKeys.removeForUser(ALICE, ALICE_KEY)).rejects.toThrow(NotFoundError);
    expect((await collect(admin.gpgKeys.allForUser(ALICE))).map((k) => k.id)).toEqual([added.id]);
  });

  it('paginates the caller’s keys like the other lists', async () => {
    const admin = client(ADMIN_TOKEN);
    for (let i = 0; i < 105; i++) await admin.gpgKeys.create({ key: armoredGpgKey(`root-${i}`) });
    const keys = await collect(admin.gpgKeys.all());
    expect(keys).toHaveLength(105);
    expect(new Set(keys.map((k) => k.id)).size).toBe(105);
  });

  it('answers 401 without a valid token', async () => {
    const stranger = client('glpat-nobody');
    await expect(stranger.gpgKeys.all().next()).rejects.toThrow(UnauthorizedError);
    await expect(stranger.gpgKeys.create({ key: armoredGpgKey('z') })).rejects.toThrow(UnauthorizedError);
  });
});
