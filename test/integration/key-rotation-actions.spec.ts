import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActionParams } from '../../src/engine/policy';
import {
  closeRotation,
  removePrecondition,
  StepNotReadyError,
  removeOldKey,
  uploadKey,
  uploadPrecondition,
  verifyKey,
  writeKey,
} from '../../src/policies/key-rotation/key-rotation.actions';
import { loadRecord, openRotations } from '../../src/policies/key-rotation/key-rotation.record';
import { generateOpenSshKeyPair } from '../../src/policies/key-rotation/openssh';
import { generateEd25519PublicKey } from '../../src/sandbox/ssh-key';
import { usePolicySandbox } from '../support/policy-sandbox';
import { ADMIN_TOKEN, baseWorld } from '../support/world-builders';

/** The root user of the base world, with one SSH key about to expire. */
function worldWithExpiringKey() {
  const base = baseWorld();
  const users = (base.users ?? []).map((user) =>
    user.username === 'root'
      ? {
          ...user,
          ssh_keys: [{ id: 50, title: 'ci-deploy', key: generateEd25519PublicKey('old'), expires_at: 'now+2d' }],
        }
      : user,
  );
  return { ...base, users };
}

/** The steps one by one against the sandbox: what each does to the record, the disk and the forge, and what it refuses. */
describe('key_rotation steps', () => {
  const forge = usePolicySandbox({ token: ADMIN_TOKEN, world: worldWithExpiringKey });
  let secrets: string;

  beforeEach(() => {
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-steps-'));
  });

  afterEach(() => {
    rmSync(secrets, { recursive: true, force: true });
  });

  const context = () => forge.context();

  const path = () => join(secrets, 'rotate', 'root-50');
  const start = (): ActionParams => ({
    rotation: 'ssh-1-50',
    kind: 'ssh',
    title: 'ci-deploy',
    old_key_id: 50,
    old_fingerprint: null,
    user_id: 1,
    username: 'root',
    self: true,
    projects: [],
    path: path(),
    secrets_dir: secrets,
    key_type: 'ed25519',
    grace_ms: 0,
    lifetime_ms: 90 * 86_400_000,
  });
  const ROTATION = { rotation: 'ssh-1-50' };
  const UPLOAD = { rotation: 'ssh-1-50', lifetime_ms: 90 * 86_400_000 };
  const rootKeys = () => [...forge.sandbox.state.sshKeys.values()].filter((key) => key.user_id === 1);
  const record = () => loadRecord(forge.state, 'ssh-1-50');

  it('write_key writes the private key 0600 and the public key beside it, then records the fingerprint; nothing reaches the forge', async () => {
    const result = await writeKey(start(), context());
    const written = await record();
    expect(written).toMatchObject({ step: 'key_written', attempt: 1, path: path() });
    expect(result.detail).toBe(`ed25519 key ${written?.fingerprint ?? ''} written to ${path()}`);
    expect(statSync(path()).mode & 0o777).toBe(0o600);
    expect(statSync(join(secrets, 'rotate')).mode & 0o777).toBe(0o700);
    expect(readFileSync(`${path()}.pub`, 'utf8')).toMatch(/^ssh-ed25519 AAAA\S+ forgewarden:ssh-1-50\n$/);
    expect(await openRotations(forge.state)).toEqual(['ssh-1-50']);
    expect(forge.sandbox.state.requestLog).toEqual([]);
  });

  it('write_key never replaces a key whose fingerprint is recorded', async () => {
    await writeKey(start(), context());
    const before = readFileSync(path(), 'utf8');
    expect((await writeKey(start(), context())).detail).toMatch(/^already written: SHA256:/);
    expect(readFileSync(path(), 'utf8')).toBe(before);
  });

  it('write_key reads deploy projects as a list, or as the JSON string that actions queued by earlier versions hold', async () => {
    const projects = [
      { project: 'acme/api', can_push: true },
      { project: 42, can_push: false },
    ];
    const deployStart = (id: number, listed: ActionParams[string]): ActionParams => ({
      rotation: `deploy-${id}`,
      kind: 'deploy',
      title: 'release',
      old_key_id: id,
      old_fingerprint: null,
      projects: listed,
      path: join(secrets, 'rotate', `acme_api-${id}`),
      secrets_dir: secrets,
      key_type: 'ed25519',
      grace_ms: 0,
    });
    await writeKey(deployStart(200, projects), context());
    await writeKey(deployStart(201, JSON.stringify(projects)), context());
    expect((await loadRecord(forge.state, 'deploy-200'))?.projects).toEqual(projects);
    expect((await loadRecord(forge.state, 'deploy-201'))?.projects).toEqual(projects);
    await expect(writeKey(deployStart(202, 'acme/api'), context())).rejects.toThrow(
      'key_rotation: action parameter "projects" must be a list of {project, can_push}, got "acme/api"',
    );
    await expect(writeKey(deployStart(203, JSON.stringify([{ project: 'acme/api' }])), context())).rejects.toThrow(
      'key_rotation: action parameter "projects.0.can_push" must be true or false',
    );
    expect(await loadRecord(forge.state, 'deploy-202')).toBeUndefined();
  });

  it('write_key refuses when secrets_dir is missing, and records nothing', async () => {
    const missing = join(secrets, 'gone');
    await expect(
      writeKey({ ...start(), secrets_dir: missing, path: join(missing, 'rotate', 'root-50') }, context()),
    ).rejects.toThrow(`secrets_dir ${missing} does not exist; not rotating`);
    expect(await record()).toBeUndefined();
    expect(existsSync(missing)).toBe(false);
  });

  it('upload and verify: the key from disk goes up with title and expiry, the forge lists it, grace starts', async () => {
    await writeKey(start(), context());
    await uploadKey(UPLOAD, context());
    const uploaded = await record();
    const created = rootKeys().find((key) => key.id !== 50);
    expect(uploaded).toMatchObject({ step: 'uploaded', new_key_id: created?.id, expires_at: created?.expires_at });
    expect(created?.fingerprint_sha256).toBe(uploaded?.fingerprint);
    expect(created?.title).toBe('ci-deploy');
    await verifyKey(ROTATION, context());
    expect(await record()).toMatchObject({ step: 'verified', verified_at: expect.any(String) });
    await removeOldKey({ ...ROTATION, old_key_id: 50, after_hook: false }, context());
    expect(rootKeys().map((key) => key.id)).toEqual([created?.id]);
    expect(await record()).toMatchObject({ step: 'done' });
    expect(await openRotations(forge.state)).toEqual([]);
  });

  it('upload adopts the key the forge already lists with the recorded fingerprint instead of adding a second', async () => {
    await writeKey(start(), context());
    const uploadedBefore = await forge.client.sshKeys.create({
      title: 'ci-deploy',
      key: readFileSync(`${path()}.pub`, 'utf8').trim(),
    });
    expect((await uploadKey(UPLOAD, context())).detail).toMatch(/^adopted key already on the forge: key \d+/);
    expect(await record()).toMatchObject({ step: 'uploaded', new_key_id: uploadedBefore.id });
    expect(rootKeys()).toHaveLength(2);
  });

  it('upload refuses a private key that is missing or not the recorded one, and goes back to writing a new one', async () => {
    await writeKey(start(), context());
    writeFileSync(path(), generateOpenSshKeyPair('ed25519', 'intruder').privateKey, { mode: 0o600 });
    await expect(uploadKey(UPLOAD, context())).rejects.toThrow(
      /^private key .* holds SHA256:\S+, not the recorded SHA256:\S+; nothing uploaded, a new key is written next pass$/,
    );
    expect(await record()).toMatchObject({ step: 'planned', fingerprint: null });
    rmSync(path());
    await writeKey(start(), context());
    rmSync(path());
    await expect(uploadKey(UPLOAD, context())).rejects.toThrow(/is missing; nothing uploaded/);
    expect(rootKeys()).toHaveLength(1);
  });

  it('a step whose predecessor has not completed does nothing', async () => {
    await expect(uploadKey(UPLOAD, context())).rejects.toBeInstanceOf(StepNotReadyError);
    await writeKey(start(), context());
    await expect(verifyKey(ROTATION, context())).rejects.toThrow(
      'not run: rotation ssh-1-50 is at key_written; retried next pass',
    );
    await expect(removeOldKey({ ...ROTATION, old_key_id: 50, after_hook: false }, context())).rejects.toBeInstanceOf(
      StepNotReadyError,
    );
    expect(rootKeys().map((key) => key.id)).toEqual([50]);
    expect(await record()).toMatchObject({ step: 'key_written', attempt: 1 });
  });

  it('close_rotation moves the key files aside (still 0600) and records why; the next generation writes a new key at the same path', async () => {
    await writeKey(start(), context());
    const closedFingerprint = (await record())?.fingerprint;
    const result = await closeRotation(
      { ...ROTATION, generation: 1, reason: 'new key 51 is gone from the forge' },
      context(),
    );
    expect(result.detail).toMatch(
      /^rotation ssh-1-50 closed: new key 51 is gone from the forge; its key file moved to .*root-50\.closed-\d{8}T\d{6}Z$/,
    );
    expect(await record()).toMatchObject({ step: 'closed', closed_reason: 'new key 51 is gone from the forge' });
    expect(await openRotations(forge.state)).toEqual([]);
    expect(existsSync(path())).toBe(false);
    const aside = readdirSync(join(secrets, 'rotate')).filter((file) => file.startsWith('root-50.closed-'));
    expect(aside.sort()).toEqual(
      [expect.stringMatching(/^root-50\.closed-\S+$/), expect.stringMatching(/^root-50\.closed-\S+\.pub$/)].sort(),
    );
    expect(statSync(join(secrets, 'rotate', aside.find((file) => !file.endsWith('.pub')) ?? '')).mode & 0o777).toBe(
      0o600,
    );
    // Closing again, or a step of the closed generation, does nothing.
    expect((await closeRotation({ ...ROTATION, generation: 1, reason: 'again' }, context())).outcome).toBe('stale');
    expect((await uploadKey({ ...UPLOAD, generation: 1 }, context())).outcome).toBe('stale');

    const next = await writeKey({ ...start(), generation: 2 }, context());
    expect(next.detail).toMatch(/^ed25519 key SHA256:\S+ written to /);
    expect(await record()).toMatchObject({ generation: 2, step: 'key_written', attempt: 1 });
    expect((await record())?.fingerprint).not.toBe(closedFingerprint);
  });

  it('preconditions say what the forge no longer shows: the old key before the upload, the new key before the removal', async () => {
    await writeKey(start(), context());
    expect(await uploadPrecondition(UPLOAD, context())).toBeUndefined();
    await uploadKey(UPLOAD, context());
    await verifyKey(ROTATION, context());
    const fresh = (await record())?.new_key_id;
    expect(await removePrecondition({ ...ROTATION, after_hook: false }, context())).toBeUndefined();
    await forge.client.sshKeys.remove(fresh ?? 0);
    expect(await removePrecondition({ ...ROTATION, after_hook: false }, context())).toBe(
      `new key ${fresh} is not listed for root: old key 50 is kept`,
    );
    expect(rootKeys().map((key) => key.id)).toEqual([50]);
  });
});
