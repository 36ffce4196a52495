import type { INestApplicationContext } from '@nestjs/common';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MovableClock } from '../../src/clock';
import type { PassResult } from '../../src/engine/engine.service';
import { keyRotationPolicy } from '../../src/policies/key-rotation/key-rotation.schema';
import { parseRecord, type RotationRecord } from '../../src/policies/key-rotation/key-rotation.record';
import { readOpenSshPrivateKey } from '../../src/policies/key-rotation/openssh';
import { FaultRules, parseWorld, SandboxState, type World } from '../../src/sandbox';
import { aPublicKey } from '../support/builders/keys';
import { useEngineHarness } from '../support/engine-harness';
import { asPerson, control, whileHeld } from '../support/person';
import { baseWorld } from '../support/world-builders';

/**
 * key_rotation on a forge people use too. The records in Redis say what the bot did; the forge says what is true now,
 * and wins: a key is removed only while its replacement is where it must be, a new key goes only where the old one
 * still is, a rotation the forge contradicts is closed (never acted on), and one user or project that cannot be read
 * stops nobody else.
 */

const HOUR_MS = 3_600_000;
const ROOT = 1;
const ALICE = 3;
const API = 1;
const WEB = 2;
const WORKER = 3;
const OPS = 4;
/** root's expiring key, alice's expired one, and the 100-day-old deploy key on acme/api (push), acme/web and acme/worker (push). */
const ROOT_KEY = 100;
const ALICE_KEY = 101;
const DEPLOY_KEY = 200;

/** The seeded public keys, the same in every world built here (as a world file's are). */
const SEEDED = { root: aPublicKey('root-ci'), alice: aPublicKey('alice-ci'), release: aPublicKey('release') };

/** The world of key-rotation.spec.ts plus acme/ops (4), which holds no deploy key at first. */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: (base.users ?? []).map((user) => {
      if (user.username === 'root')
        return {
          ...user,
          ssh_keys: [
            { id: ROOT_KEY, title: 'ci-deploy', key: SEEDED.root, created_at: 'now-85d', expires_at: 'now+5d' },
          ],
        };
      if (user.username === 'alice')
        return {
          ...user,
          ssh_keys: [{ id: ALICE_KEY, title: 'ci-deploy alice', key: SEEDED.alice, expires_at: 'now-1d' }],
        };
      return user;
    }),
    projects: [
      ...(base.projects ?? []),
      { id: WORKER, path: 'worker', namespace: 'acme' },
      { id: OPS, path: 'ops', namespace: 'acme' },
    ],
    deploy_keys: [
      {
        id: DEPLOY_KEY,
        title: 'release',
        key: SEEDED.release,
        created_at: 'now-100d',
        projects: [
          { project: 'acme/api', can_push: true },
          { project: 'acme/web', can_push: false },
          { project: 'acme/worker', can_push: true },
        ],
      },
    ],
  };
}

const ROOT_SSH = '      - { user: self, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }';
const ALICE_SSH = '      - { user: alice, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }';
const deployEntry = (projects: string) =>
  `      - { projects: ${projects}, titles: ["^release"], rotate_after: 90d, grace: 1d }`;
const THREE = deployEntry('[acme/api, acme/web, acme/worker]');

describe('key_rotation while people work on the forge', () => {
  const harness = useEngineHarness({ name: 'key-rotation-forge-changes', world, policyTypes: [keyRotationPolicy] });
  let clock: MovableClock;
  let secrets: string;

  beforeEach(() => {
    clock = new MovableClock(harness.sandbox.state.clock.now());
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-forge-'));
  });

  afterEach(() => {
    rmSync(secrets, { recursive: true, force: true });
  });

  function app(
    options: { ssh?: string[]; deploy?: string[]; maxActions?: number } = {},
  ): Promise<INestApplicationContext> {
    const ssh = options.ssh ?? [ROOT_SSH, ALICE_SSH];
    const deploy = options.deploy ?? [THREE];
    return harness.app({
      clock,
      gitlab: 'max_requests_per_minute: 100000, timeout: 30s',
      policies: [
        '  - name: rotate',
        '    type: key_rotation',
        '    interval: 1h',
        `    secrets_dir: "${secrets}"`,
        ...(ssh.length > 0 ? ['    ssh_keys:', ...ssh] : []),
        ...(deploy.length > 0 ? ['    deploy_keys:', ...deploy] : []),
        ...(options.maxActions ? [`    max_actions_per_run: ${options.maxActions}`] : []),
      ],
    });
  }

  const pass = (engine: INestApplicationContext, mode: 'act' | 'plan' = 'act'): Promise<PassResult> =>
    harness.pass(engine, 'rotate', mode);
  const sandbox = () => harness.sandbox;

  async function advanceHours(hours: number): Promise<void> {
    expect(await control(sandbox(), 'POST', '/clock', { advance_seconds: hours * 3600 })).toBe(200);
    clock.advance(hours * HOUR_MS);
  }

  const sshKeyIds = (userId: number) =>
    [...sandbox().state.sshKeys.values()]
      .filter((key) => key.user_id === userId)
      .map((key) => key.id)
      .sort((a, b) => a - b);
  const newSshKeyOf = (userId: number, oldId: number) =>
    [...sandbox().state.sshKeys.values()].find((key) => key.user_id === userId && key.id !== oldId);
  /** Project id → can_push of deploy key `id`, or undefined when the key is on no project. */
  const deployKeyOn = (id: number): Record<number, boolean> | undefined => {
    const key = sandbox().state.deployKeys.get(id);
    return key ? Object.fromEntries([...key.projects].map(([project, link]) => [project, link.can_push])) : undefined;
  };
  const newDeployKeyIds = () =>
    [...sandbox().state.deployKeys.keys()].filter((id) => id !== DEPLOY_KEY).sort((a, b) => a - b);
  const botWrites = () =>
    sandbox().state.requestLog.filter(
      (entry) => entry.method !== 'GET' && entry.headers['user-agent']?.startsWith('forgewarden'),
    );
  const acted = (result: PassResult) =>
    result.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`);
  const record = async (id: string): Promise<RotationRecord | undefined> =>
    parseRecord((await harness.redis.get(`${harness.prefix}:state:rotate:rotation:${id}`)) ?? undefined);
  const fingerprintAt = (path: string) => readOpenSshPrivateKey(readFileSync(path, 'utf8')).fingerprint;
  const keyDir = () => join(secrets, 'rotate');
  /** The key files moved aside when a rotation was closed. */
  const setAside = (name: string) =>
    readdirSync(keyDir()).filter((file) => file.startsWith(`${name}.closed-`) && !file.endsWith('.pub'));

  describe('never locks anyone out: the old key goes only while the new key is listed where it must be', () => {
    it('an administrator deleted the new SSH key: after grace the old key stays, the rotation is closed, and the next pass rotates again with a new key file', async () => {
      const engine = await app({ ssh: [ROOT_SSH], deploy: [] });
      await pass(engine);
      const first = newSshKeyOf(ROOT, ROOT_KEY);
      expect(first).toBeDefined();
      const firstFingerprint = fingerprintAt(join(keyDir(), `root-${ROOT_KEY}`));
      expect((await asPerson(sandbox(), 'DELETE', `/users/${ROOT}/keys/${first?.id}`)).status).toBe(204);

      await advanceHours(25);
      const closing = await pass(engine);
      // root still has the key it had: the bot sent nothing.
      expect(sshKeyIds(ROOT)).toEqual([ROOT_KEY]);
      expect(botWrites().filter((entry) => entry.method === 'DELETE')).toEqual([]);
      expect(closing.decisions.map((d) => `${d.action}: ${d.reason}`)).toEqual([
        `close_rotation: close: new key ${first?.id} is gone from the forge; nothing on the forge is changed, and the next pass decides afresh`,
      ]);
      expect(acted(closing)).toEqual(['close_rotation:done']);
      // The closed rotation's private key is kept aside (0600), never to be adopted again.
      const aside = setAside(`root-${ROOT_KEY}`);
      expect(aside).toHaveLength(1);
      expect(statSync(join(keyDir(), aside[0])).mode & 0o777).toBe(0o600);
      expect(fingerprintAt(join(keyDir(), aside[0]))).toBe(firstFingerprint);
      expect(await record(`ssh-${ROOT}-${ROOT_KEY}`)).toMatchObject({
        step: 'closed',
        closed_reason: `new key ${first?.id} is gone from the forge`,
      });

      // The next pass decides afresh: key 100 is still due, so a new rotation (generation 2) with a new key.
      const again = await pass(engine);
      expect(acted(again)).toEqual(['write_key:done', 'upload_key:done', 'verify_key:done']);
      expect(again.records[0].detail).toMatch(/^ed25519 key SHA256:\S+ written to /);
      const second = newSshKeyOf(ROOT, ROOT_KEY);
      expect(second?.id).not.toBe(first?.id);
      expect(fingerprintAt(join(keyDir(), `root-${ROOT_KEY}`))).not.toBe(firstFingerprint);
      expect(second?.fingerprint_sha256).toBe(fingerprintAt(join(keyDir(), `root-${ROOT_KEY}`)));
      await advanceHours(25);
      await pass(engine);
      expect(sshKeyIds(ROOT)).toEqual([second?.id]);
    });

    it('an administrator deleted the new SSH key just before the removal: the removal is stale and sends nothing', async () => {
      const engine = await app({ ssh: [ROOT_SSH], deploy: [] });
      await pass(engine);
      const fresh = newSshKeyOf(ROOT, ROOT_KEY);
      await advanceHours(25);
      // The removal's precondition lists root's keys (after the observe's listing); the person deletes the new key then.
      const result = await whileHeld(
        sandbox(),
        { method: 'GET', path: '^/api/v4/user/keys$', after: 1 },
        () => pass(engine),
        async () => {
          expect((await asPerson(sandbox(), 'DELETE', `/users/${ROOT}/keys/${fresh?.id}`)).status).toBe(204);
        },
      );
      expect(sshKeyIds(ROOT)).toEqual([ROOT_KEY]);
      expect(botWrites().filter((entry) => entry.method === 'DELETE')).toEqual([]);
      expect(
        result.records.filter((r) => r.outcome !== 'skipped').map((r) => [r.decision.action, r.outcome, r.detail]),
      ).toEqual([
        ['remove_old_key', 'stale', `new key ${fresh?.id} is not listed for root: old key ${ROOT_KEY} is kept`],
      ]);
      // The next pass closes the rotation rather than trying again.
      expect(acted(await pass(engine))).toEqual(['close_rotation:done']);
      expect(sshKeyIds(ROOT)).toEqual([ROOT_KEY]);
    });

    it('a person removed the new deploy key from acme/web: no old key is removed; the new key is withdrawn everywhere before the rotation closes and a new one is made', async () => {
      const engine = await app({ ssh: [] });
      await pass(engine);
      const [fresh] = newDeployKeyIds();
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
      expect((await asPerson(sandbox(), 'DELETE', `/projects/${WEB}/deploy_keys/${fresh}`)).status).toBe(204);

      await advanceHours(25);
      const withdrawing = await pass(engine);
      expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
      // The rotation no longer vouches for its key: it leaves acme/api and acme/worker, first thing, before anything closes.
      expect(deployKeyOn(fresh)).toBeUndefined();
      expect(
        withdrawing.records
          .filter((r) => r.outcome !== 'skipped')
          .map((r) => `${r.decision.action}:${r.outcome} ${r.decision.reason}`),
      ).toEqual([
        `remove_new_key:done withdraw new key ${fresh} from acme/api: new key ${fresh} is gone from acme/web; no rotation vouches for it any more`,
        `remove_new_key:done withdraw new key ${fresh} from acme/worker: new key ${fresh} is gone from acme/web; no rotation vouches for it any more`,
      ]);
      expect(
        botWrites()
          .map((entry) => `${entry.method} ${entry.path}`)
          .filter((line) => line.startsWith('DELETE')),
      ).toEqual([
        `DELETE /api/v4/projects/acme%2Fapi/deploy_keys/${fresh}`,
        `DELETE /api/v4/projects/acme%2Fworker/deploy_keys/${fresh}`,
      ]);

      const closing = await pass(engine);
      expect(acted(closing)).toEqual(['close_rotation:done']);
      // Decided afresh: a new generation, with a new key, while no earlier new key is live.
      const again = await pass(engine);
      expect(acted(again)).toEqual([
        'write_key:done',
        'upload_key:done',
        'enable_key:done',
        'enable_key:done',
        'verify_key:done',
      ]);
      const [second] = newDeployKeyIds();
      expect(second).not.toBe(fresh);
      expect(newDeployKeyIds()).toEqual([second]);
    });
  });

  describe('records from another forge: the forge wins', () => {
    /**
     * The sandbox restarted with its world reset, at the same URL: the keys are the seeded ones again (key 100 now
     * holding another key), the new keys the bot made are gone, and their ids are taken by other keys.
     */
    function resetWorld(newKeyIds: { deploy: number }): void {
      const next = world();
      next.users = (next.users ?? []).map((user) =>
        user.username === 'root'
          ? {
              ...user,
              ssh_keys: [
                {
                  id: ROOT_KEY,
                  title: 'ci-deploy',
                  key: aPublicKey('root-other'),
                  created_at: 'now-85d',
                  expires_at: 'now+5d',
                },
              ],
            }
          : user,
      );
      next.deploy_keys = [
        ...(next.deploy_keys ?? []),
        {
          id: newKeyIds.deploy,
          title: 'release-other',
          key: aPublicKey('other'),
          created_at: 'now-1d',
          projects: [{ project: 'acme/api' }],
        },
      ];
      const fresh = new SandboxState(parseWorld(next), new FaultRules());
      const state = sandbox().state;
      state.sshKeys.clear();
      for (const [id, key] of fresh.sshKeys) state.sshKeys.set(id, key);
      state.deployKeys.clear();
      for (const [id, key] of fresh.deployKeys) state.deployKeys.set(id, key);
    }

    it('never removes a key on the strength of such a record: each is closed with what the forge contradicts, and the keys are rotated afresh', async () => {
      const engine = await app();
      await pass(engine);
      const rootNew = newSshKeyOf(ROOT, ROOT_KEY);
      const aliceNew = newSshKeyOf(ALICE, ALICE_KEY);
      const [deployNew] = newDeployKeyIds();
      const gen1 = [`root-${ROOT_KEY}`, `alice-${ALICE_KEY}`, `acme_api-${DEPLOY_KEY}`].map((name) =>
        fingerprintAt(join(keyDir(), name)),
      );
      const rootOld = await record(`ssh-${ROOT}-${ROOT_KEY}`);

      resetWorld({ deploy: deployNew });
      await advanceHours(25);
      const plan = await pass(engine, 'plan');
      const closed = await pass(engine);
      // Not one key was removed on the strength of those records.
      expect(botWrites().filter((entry) => entry.method === 'DELETE')).toEqual([]);
      expect(sshKeyIds(ROOT)).toEqual([ROOT_KEY]);
      expect(sshKeyIds(ALICE)).toEqual([ALICE_KEY]);
      expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
      const rootOther = sandbox().state.sshKeys.get(ROOT_KEY)?.fingerprint_sha256;
      expect(plan.decisions.filter((d) => d.action !== 'skip').map((d) => `${d.action}: ${d.reason}`)).toEqual([
        `close_rotation: close: key ${ROOT_KEY} of root (user 1) is another key than the one this rotation replaces (${rootOther}, not ${rootOld?.old_fingerprint}); nothing on the forge is changed, and the next pass decides afresh`,
        `close_rotation: close: new key ${aliceNew?.id} is gone from the forge; nothing on the forge is changed, and the next pass decides afresh`,
        `close_rotation: close: deploy key ${deployNew} on acme/api is not the new key ${(await record(`deploy-${DEPLOY_KEY}`))?.fingerprint} (it is ${sandbox().state.deployKeys.get(deployNew)?.fingerprint_sha256}); nothing on the forge is changed, and the next pass decides afresh`,
      ]);
      // No decision speaks of keeping or removing an old key of those records.
      expect(plan.decisions.filter((d) => /old key/.test(d.reason) && d.action !== 'close_rotation')).toEqual([]);

      expect(acted(closed)).toEqual(['close_rotation:done', 'close_rotation:done', 'close_rotation:done']);
      expect(rootNew?.id).toBeDefined();

      // Decided afresh from what the forge shows: every old key is due, so new rotations with new key files.
      const again = await pass(engine);
      expect(again.records.filter((r) => r.decision.action === 'write_key').map((r) => r.detail)).toEqual([
        expect.stringMatching(/^ed25519 key SHA256:\S+ written to /),
        expect.stringMatching(/^ed25519 key SHA256:\S+ written to /),
        expect.stringMatching(/^ed25519 key SHA256:\S+ written to /),
      ]);
      const gen2 = [`root-${ROOT_KEY}`, `alice-${ALICE_KEY}`, `acme_api-${DEPLOY_KEY}`].map((name) =>
        fingerprintAt(join(keyDir(), name)),
      );
      gen2.forEach((fingerprint, index) => expect(fingerprint).not.toBe(gen1[index]));
      expect(await record(`ssh-${ROOT}-${ROOT_KEY}`)).toMatchObject({
        generation: 2,
        step: 'verified',
        old_fingerprint: rootOther,
      });
      // release-other, under the id the bot's key had, is a key of its own: young, so left alone.
      expect(again.decisions.find((d) => d.target.startsWith(`deploy key ${deployNew} `))?.reason).toMatch(
        /^skip: \d+d old, rotates after 90d$/,
      );
      await advanceHours(25);
      await pass(engine);
      expect(sshKeyIds(ROOT)).toHaveLength(1);
      expect(sshKeyIds(ROOT)).not.toContain(ROOT_KEY);
      expect(deployKeyOn(DEPLOY_KEY)).toBeUndefined();
      expect(deployKeyOn(deployNew)).toEqual({ [API]: false });
    });
  });

  describe('gives a new key only where the old key still is, and to every project that holds it', () => {
    it('a person removed the old deploy key from acme/web between passes: the new key is not enabled there', async () => {
      // The creation fails once: the rotation stops with its key written.
      expect(
        await control(sandbox(), 'POST', '/faults', {
          method: 'POST',
          path: '/projects/[^/]+/deploy_keys$',
          status: 500,
          times: 1,
        }),
      ).toBe(201);
      const engine = await app({ ssh: [] });
      await pass(engine);
      expect(newDeployKeyIds()).toEqual([]);
      expect((await asPerson(sandbox(), 'DELETE', `/projects/${WEB}/deploy_keys/${DEPLOY_KEY}`)).status).toBe(204);

      const result = await pass(engine);
      const [fresh] = newDeployKeyIds();
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
      expect(result.records.filter((r) => r.outcome !== 'skipped').map((r) => r.decision.reason)).toEqual([
        expect.stringMatching(
          /^upload the new public key SHA256:\S+: create it on acme\/api, which holds old key 200$/,
        ),
        'enable the new key on acme/worker (can_push true), which holds old key 200',
        expect.stringMatching(/^verify the forge lists SHA256:\S+ on acme\/api, acme\/worker$/),
      ]);
      await advanceHours(25);
      await pass(engine);
      expect(deployKeyOn(DEPLOY_KEY)).toBeUndefined();
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
    });

    it('a person removed the old deploy key from acme/web after the enabling was decided: it is stale and not sent', async () => {
      const engine = await app({ ssh: [] });
      // The enabling's precondition reads acme/web's deploy keys (after the observe's read); the person acts then.
      const result = await whileHeld(
        sandbox(),
        { method: 'GET', path: '^/api/v4/projects/acme%2Fweb/deploy_keys$', after: 1 },
        () => pass(engine),
        async () => {
          expect((await asPerson(sandbox(), 'DELETE', `/projects/${WEB}/deploy_keys/${DEPLOY_KEY}`)).status).toBe(204);
        },
      );
      const [fresh] = newDeployKeyIds();
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
      expect(
        botWrites().filter((entry) => entry.path.includes('acme%2Fweb') || entry.path.includes(`/projects/${WEB}/`)),
      ).toEqual([]);
      expect(result.records.map((r) => `${r.decision.action}:${r.outcome}`)).toEqual([
        'write_key:done',
        'upload_key:done',
        'enable_key:stale',
        'enable_key:done',
        'verify_key:done',
      ]);
      expect(result.records[2].detail).toBe('acme/web no longer holds old key 200: the new key is not enabled there');
    });

    it('an administrator deleted alice’s old SSH key between passes: no new key is uploaded to her, and the rotation is closed', async () => {
      expect(
        await control(sandbox(), 'POST', '/faults', {
          method: 'POST',
          path: `/users/${ALICE}/keys$`,
          status: 500,
          times: 1,
        }),
      ).toBe(201);
      const engine = await app({ ssh: [ALICE_SSH], deploy: [] });
      await pass(engine);
      expect((await asPerson(sandbox(), 'DELETE', `/users/${ALICE}/keys/${ALICE_KEY}`)).status).toBe(204);

      const result = await pass(engine);
      expect(sshKeyIds(ALICE)).toEqual([]);
      expect(botWrites().filter((entry) => entry.method === 'POST')).toHaveLength(1);
      expect(result.records.map((r) => `${r.decision.action}:${r.outcome} ${r.decision.reason}`)).toEqual([
        `close_rotation:done close: old key ${ALICE_KEY} is gone from the keys of alice (user 3) (removed by someone else): no new key is uploaded; nothing on the forge is changed, and the next pass decides afresh`,
      ]);
    });

    it('an administrator deleted alice’s old SSH key while the upload was about to go: it is stale and not sent', async () => {
      const engine = await app({ ssh: [ALICE_SSH], deploy: [] });
      const result = await whileHeld(
        sandbox(),
        { method: 'GET', path: `^/api/v4/users/${ALICE}/keys$`, after: 1 },
        () => pass(engine),
        async () => {
          expect((await asPerson(sandbox(), 'DELETE', `/users/${ALICE}/keys/${ALICE_KEY}`)).status).toBe(204);
        },
      );
      expect(sshKeyIds(ALICE)).toEqual([]);
      expect(botWrites()).toEqual([]);
      expect(result.records.find((r) => r.decision.action === 'upload_key')).toMatchObject({
        outcome: 'stale',
        detail: `old key ${ALICE_KEY} is gone from the keys of alice: no new key is uploaded`,
      });
    });

    it('a project that gained the old key mid-rotation gets the new key and loses the old one like the others; plan never calls it removed before', async () => {
      const engine = await app({ ssh: [], deploy: [deployEntry('["acme/*"]')] });
      await pass(engine);
      const [fresh] = newDeployKeyIds();
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
      // A person enables the old key on acme/ops.
      expect((await asPerson(sandbox(), 'POST', `/projects/${OPS}/deploy_keys/${DEPLOY_KEY}/enable`)).status).toBe(201);

      const next = await pass(engine);
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true, [OPS]: false });
      expect(
        next.records
          .filter((r) => r.outcome !== 'skipped')
          .map((r) => `${r.decision.action}:${r.outcome} ${r.decision.reason}`),
      ).toEqual(['enable_key:done enable the new key on acme/ops (can_push false), which holds old key 200']);

      await advanceHours(25);
      const plan = await pass(engine, 'plan');
      expect(plan.decisions.filter((d) => d.action === 'remove_old_key').map((d) => d.reason)).toEqual([
        'remove old key 200 from acme/api, acme/ops, acme/web, acme/worker: grace 1d passed',
      ]);
      await pass(engine);
      expect(deployKeyOn(DEPLOY_KEY)).toBeUndefined();
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true, [OPS]: false });
    });
  });

  describe('closes a rotation whose user or projects are gone, instead of holding the pass forever', () => {
    it('the user was deleted: the rotation is closed, and later passes have nothing left to do for it', async () => {
      const engine = await app({ ssh: [ALICE_SSH], deploy: [], maxActions: 1 });
      const first = await pass(engine);
      expect(acted(first)[0]).toBe('write_key:done');
      expect(await control(sandbox(), 'DELETE', `/users/${ALICE}`)).toBe(204);

      const second = await pass(engine);
      const third = await pass(engine);
      expect(acted(third)).toEqual([]);
      expect(
        second.records
          .filter((r) => r.outcome !== 'skipped')
          .map((r) => `${r.decision.action}:${r.outcome} ${r.decision.reason}`),
      ).toEqual([
        'close_rotation:done close: user alice (user 3) is gone from the forge; nothing on the forge is changed, and the next pass decides afresh',
      ]);
      expect(third.decisions.map((d) => d.reason)).toEqual(['skip: no user alice on the forge']);
    });

    it('every project of a deploy key was deleted: the pass is partial and the rotation closed on the instance listing’s word', async () => {
      const engine = await app({ ssh: [] });
      await pass(engine);
      for (const project of [API, WEB, WORKER])
        expect(await control(sandbox(), 'DELETE', `/projects/${project}`)).toBe(204);

      const result = await pass(engine);
      expect(result.unobserved?.map((entry) => entry.target)).toEqual([
        'project acme/api',
        'project acme/web',
        'project acme/worker',
      ]);
      expect(
        result.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`),
      ).toEqual(['close_rotation:done']);
      // A 404 is not gone: the administrator's listing of every deploy key, which no longer has it, is.
      expect(result.records[0].decision.reason).toMatch(
        /^close: new key \d+ is gone from the forge \(the instance's deploy keys do not list it\);/,
      );
      expect(acted(await pass(engine))).toEqual([]);
    });
  });

  describe('one user or project never stops the others', () => {
    it('a project closed to the token (reporter: its deploy keys answer 403) is left alone; the SSH keys and the other projects rotate in the same pass', async () => {
      expect(await control(sandbox(), 'POST', '/access', { user: 'root', project: 'acme/web', level: 20 })).toBe(200);
      const engine = await app();
      const first = await pass(engine);
      expect(first.unobserved).toEqual([
        {
          target: 'project acme/web',
          reason: 'GET projects/acme%2Fweb/deploy_keys?page=1&per_page=100 → 403: 403 Forbidden',
        },
      ]);
      expect(sshKeyIds(ROOT)).toHaveLength(2);
      expect(sshKeyIds(ALICE)).toHaveLength(2);
      const [fresh] = newDeployKeyIds().filter((id) => sandbox().state.deployKeys.get(id)?.title === 'release');
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
      // Nothing was sent about acme/web.
      expect(
        botWrites().filter((entry) => entry.path.includes('acme%2Fweb') || entry.path.includes(`/projects/${WEB}/`)),
      ).toEqual([]);

      // After grace: the old key goes from the projects read; acme/web keeps it, and the rotation stays open for it.
      await advanceHours(25);
      const second = await pass(engine);
      expect(
        second.records.find((r) => r.decision.action === 'remove_old_key' && r.decision.target.startsWith('deploy key'))
          ?.detail,
      ).toBe(
        'old key 200 removed from acme/api, acme/worker; the rotation stays open until every selected project can be read',
      );
      expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [WEB]: false });
      expect(sshKeyIds(ROOT)).toHaveLength(1);
      expect(sshKeyIds(ALICE)).toHaveLength(1);

      // Readable again: acme/web gets the new key and loses the old one, and the rotation is done.
      expect(await control(sandbox(), 'DELETE', '/access')).toBe(204);
      const third = await pass(engine);
      expect(third.unobserved).toBeUndefined();
      expect(acted(third)).toEqual(['enable_key:done', 'remove_old_key:done']);
      expect(deployKeyOn(DEPLOY_KEY)).toBeUndefined();
      expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
      expect(await record(`deploy-${DEPLOY_KEY}`)).toMatchObject({ step: 'done' });
    });

    it('one user’s keys that cannot be read are that user’s problem: the others rotate in the same pass', async () => {
      // Every read of alice's keys fails, retries included.
      expect(
        await control(sandbox(), 'POST', '/faults', { method: 'GET', path: `/users/${ALICE}/keys$`, status: 500 }),
      ).toBe(201);
      const engine = await app();
      const result = await pass(engine);
      expect(result.unobserved?.map((entry) => entry.target)).toEqual(['SSH keys of alice']);
      expect(result.decisions.find((d) => d.target === 'SSH keys of alice')?.reason).toBe(
        'skip: the keys of alice could not be read this pass; the other users and projects go on',
      );
      expect(sshKeyIds(ROOT)).toHaveLength(2);
      expect(newDeployKeyIds()).toHaveLength(1);
      expect(sshKeyIds(ALICE)).toEqual([ALICE_KEY]);
    });
  });

  it('a write the forge refuses (403) is parked, not sent again next pass, and the record says what was refused', async () => {
    expect(
      await control(sandbox(), 'POST', '/faults', { method: 'POST', path: `/users/${ALICE}/keys$`, status: 403 }),
    ).toBe(201);
    const engine = await app({ ssh: [ALICE_SSH], deploy: [] });
    const first = await pass(engine);
    const lastError = (await record(`ssh-${ALICE}-${ALICE_KEY}`))?.last_error;
    const second = await pass(engine);
    // One attempt reached the forge; the next pass found the step parked.
    expect(botWrites().filter((entry) => entry.method === 'POST')).toHaveLength(1);
    expect(second.records.find((r) => r.decision.action === 'upload_key')?.outcome).toBe('refused');
    expect(first.records.find((r) => r.decision.action === 'upload_key')).toMatchObject({
      outcome: 'refused',
      detail: expect.stringMatching(/^POST users\/3\/keys → 403: .*; parked until /),
    });
    expect(lastError).toMatch(/^POST users\/3\/keys → 403: /);
    expect(second.decisions.find((d) => d.action === 'upload_key')?.details).toEqual([
      expect.stringMatching(/^last attempt failed: POST users\/3\/keys → 403: /),
    ]);
    expect(sshKeyIds(ALICE)).toEqual([ALICE_KEY]);
  });
});
