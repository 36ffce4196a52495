import type { INestApplicationContext } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { DataMarker } from '../../src/engine/stores/data-marker';
import { testConfig } from '../support/config';
import { keyRotationPolicy } from '../../src/policies/key-rotation/key-rotation.schema';
import { readOpenSshPrivateKey } from '../../src/policies/key-rotation/openssh';
import type { RunningSandbox, World } from '../../src/sandbox';
import { ADMIN_TOKEN, baseWorld, USER_TOKEN } from '../support/world-builders';
import { parseSshPublicKey } from '../../src/sandbox/ssh-key';
import { call } from '../support/sandbox-http';
import { aPublicKey } from '../support/builders/keys';
import { useEngineHarness } from '../support/engine-harness';
import { redisText } from '../support/redis-text';
import { MovableClock } from '../../src/clock';

const HOUR_MS = 3_600_000;
const ROOT = 1;
const ALICE = 3;
/** The old keys: root's own, alice's (needs the administrator's token) and a deploy key on three projects. */
const ROOT_KEY = 100;
const ALICE_KEY = 101;
const DEPLOY_KEY = 200;

/** root (admin), mia, alice, olaf; projects acme/api, acme/web, acme/worker; the keys above plus some left alone. */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: (base.users ?? []).map((user) => {
      if (user.username === 'root') {
        return {
          ...user,
          ssh_keys: [
            {
              id: ROOT_KEY,
              title: 'ci-deploy',
              key: aPublicKey('root-ci'),
              created_at: 'now-85d',
              expires_at: 'now+5d',
            },
            {
              id: 110,
              title: 'ci-deploy-fresh',
              key: aPublicKey('root-fresh'),
              created_at: 'now-1d',
              expires_at: 'now+60d',
            },
            { id: 111, title: 'laptop', key: aPublicKey('root-laptop'), created_at: 'now-1d', expires_at: 'now+1d' },
          ],
        };
      }
      if (user.username === 'alice') {
        return {
          ...user,
          ssh_keys: [{ id: ALICE_KEY, title: 'ci-deploy alice', key: aPublicKey('alice-ci'), expires_at: 'now-1d' }],
        };
      }
      return user;
    }),
    projects: [...(base.projects ?? []), { id: 3, path: 'worker', name: 'Worker', namespace: 'acme' }],
    deploy_keys: [
      {
        id: DEPLOY_KEY,
        title: 'release',
        key: aPublicKey('release'),
        created_at: 'now-100d',
        projects: [
          { project: 'acme/api', can_push: true },
          { project: 'acme/web', can_push: false },
          { project: 'acme/worker', can_push: true },
        ],
      },
      {
        id: 201,
        title: 'release-young',
        key: aPublicKey('young'),
        created_at: 'now-10d',
        projects: [{ project: 'acme/api' }],
      },
    ],
  };
}

describe('key_rotation against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'key-rotation', world, policyTypes: [keyRotationPolicy] });
  let sandbox: RunningSandbox;
  let clock: MovableClock;
  let secrets: string;

  beforeEach(() => {
    sandbox = harness.sandbox;
    clock = new MovableClock(sandbox.state.clock.now());
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-it-'));
  });

  afterEach(() => {
    rmSync(secrets, { recursive: true, force: true });
  });

  interface AppOptions {
    token?: string;
    maxActions?: number;
    onRotate?: string;
    ssh?: string[];
    deploy?: string[];
    secretsDir?: string;
  }

  const SSH = [
    '      - { user: self, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }',
    '      - { user: alice, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }',
  ];
  const DEPLOY = [
    '      - { projects: [acme/api, acme/web, acme/worker], titles: ["^release"], rotate_after: 90d, grace: 1d }',
  ];

  function app(options: AppOptions = {}): Promise<INestApplicationContext> {
    const ssh = options.ssh ?? SSH;
    const deploy = options.deploy ?? DEPLOY;
    const policies = [
      '  - name: rotate',
      '    type: key_rotation',
      '    interval: 1h',
      `    secrets_dir: "${options.secretsDir ?? secrets}"`,
      ...(ssh.length > 0 ? ['    ssh_keys:', ...ssh] : []),
      ...(deploy.length > 0 ? ['    deploy_keys:', ...deploy] : []),
      ...(options.onRotate ? [`    on_rotate: ${JSON.stringify(options.onRotate)}`] : []),
      ...(options.maxActions ? [`    max_actions_per_run: ${options.maxActions}`] : []),
    ];
    return harness.app({ token: options.token, policies, clock });
  }

  const close = (engineApp: INestApplicationContext): Promise<void> => harness.close(engineApp);

  const pass = (engineApp: INestApplicationContext, mode: 'act' | 'plan' = 'act'): Promise<PassResult> =>
    harness.pass(engineApp, 'rotate', mode);

  /** Moves the sandbox's clock (through its control API) and the app's by the same amount. */
  async function advanceHours(hours: number): Promise<void> {
    const response = await call(sandbox.url, '/__sandbox/clock', {
      method: 'POST',
      body: { advance_seconds: hours * 3600 },
    });
    expect(response.status).toBe(200);
    clock.advance(hours * HOUR_MS);
  }

  async function fault(rule: Record<string, unknown>): Promise<void> {
    const response = await call(sandbox.url, '/__sandbox/faults', { method: 'POST', body: rule });
    expect(response.status).toBe(201);
  }

  const sshKeys = (userId: number) => [...sandbox.state.sshKeys.values()].filter((key) => key.user_id === userId);
  const titled = (userId: number, title: string) => sshKeys(userId).filter((key) => key.title === title);
  const deployKeys = (title: string) => [...sandbox.state.deployKeys.values()].filter((key) => key.title === title);
  const paths = {
    root: () => join(secrets, 'rotate', `root-${ROOT_KEY}`),
    alice: () => join(secrets, 'rotate', `alice-${ALICE_KEY}`),
    deploy: () => join(secrets, 'rotate', `acme_api-${DEPLOY_KEY}`),
  };

  /** `type base64` of the public key OpenSSH derives from the private key file (its own parser where ssh-keygen is missing). */
  function publicKeyOf(path: string): string {
    let line: string;
    try {
      line = execFileSync('ssh-keygen', ['-y', '-f', path], { encoding: 'utf8' });
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error;
      line = readOpenSshPrivateKey(readFileSync(path, 'utf8')).publicKey;
    }
    return line.trim().split(/\s+/).slice(0, 2).join(' ');
  }

  /** The one new key replacing `oldId` matches the private key on disk, which is 0600, with its public key beside it. */
  function expectKeptPrivateHalf(newKeyText: string, path: string): void {
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(publicKeyOf(path)).toBe(parseSshPublicKey(newKeyText)?.normalized);
    expect(readFileSync(`${path}.pub`, 'utf8').split(/\s+/).slice(0, 2).join(' ')).toBe(
      parseSshPublicKey(newKeyText)?.normalized,
    );
  }

  /** Exactly one new key per old key, each matching its private key on disk; `oldKept`: whether the old keys are still there. */
  function expectRotated(oldKept: boolean): void {
    const rootKeys = titled(ROOT, 'ci-deploy');
    const rootNew = rootKeys.filter((key) => key.id !== ROOT_KEY);
    expect(rootNew).toHaveLength(1);
    expect(rootKeys.some((key) => key.id === ROOT_KEY)).toBe(oldKept);
    expectKeptPrivateHalf(rootNew[0].key, paths.root());

    const aliceKeys = titled(ALICE, 'ci-deploy alice');
    const aliceNew = aliceKeys.filter((key) => key.id !== ALICE_KEY);
    expect(aliceNew).toHaveLength(1);
    expect(aliceKeys.some((key) => key.id === ALICE_KEY)).toBe(oldKept);
    expectKeptPrivateHalf(aliceNew[0].key, paths.alice());

    const release = deployKeys('release');
    const deployNew = release.filter((key) => key.id !== DEPLOY_KEY);
    expect(deployNew).toHaveLength(1);
    expect(Object.fromEntries(deployNew[0].projects)).toEqual({
      1: { can_push: true },
      2: { can_push: false },
      3: { can_push: true },
    });
    expect(release.some((key) => key.id === DEPLOY_KEY)).toBe(oldKept);
    expectKeptPrivateHalf(deployNew[0].key, paths.deploy());
  }

  /** Nothing else changed: the keys the policy does not manage, or that are not due, are untouched. */
  function expectOthersUntouched(): void {
    expect(
      sshKeys(ROOT)
        .filter((key) => key.title !== 'ci-deploy')
        .map((key) => key.id)
        .sort(),
    ).toEqual([110, 111]);
    expect(deployKeys('release-young').map((key) => key.id)).toEqual([201]);
  }

  it('rotates own and another user’s SSH keys and a deploy key shared by 3 projects; removes the old keys after the grace period, not before', async () => {
    const engine = await app({
      onRotate: `echo "$FORGEWARDEN_KEY_ID $FORGEWARDEN_KEY_TITLE $FORGEWARDEN_KEY_PATH" >> ${join(secrets, 'hook.log')}`,
    });
    const plan = await pass(engine, 'plan');
    expect(plan.decisions.filter((d) => d.action === 'write_key').map((d) => d.reason)).toEqual([
      'rotate: expires 2025-06-07, within rotate_before 14d',
      'rotate: expired 2025-06-01, still listed',
      'rotate: created 2025-02-22, older than rotate_after 90d',
    ]);
    expect(sandbox.state.requestLog.filter((entry) => entry.method !== 'GET')).toEqual([]);

    const first = await pass(engine);
    // The deploy key is created on acme/api and enabled on the two others, one action each.
    expect(
      first.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`),
    ).toEqual([
      ...Array.from({ length: 2 }, () => [
        'write_key:done',
        'upload_key:done',
        'verify_key:done',
        'run_on_rotate:done',
      ]).flat(),
      ...[
        'write_key:done',
        'upload_key:done',
        'enable_key:done',
        'enable_key:done',
        'verify_key:done',
        'run_on_rotate:done',
      ],
    ]);
    expectRotated(true);
    expectOthersUntouched();
    const rootNew = titled(ROOT, 'ci-deploy').find((key) => key.id !== ROOT_KEY);
    // lifetime 90d from the upload (2025-06-02).
    expect(rootNew?.expires_at?.slice(0, 10)).toBe('2025-08-31');
    const hookLines = readFileSync(join(secrets, 'hook.log'), 'utf8').trim().split('\n').sort();
    const newDeploy = deployKeys('release').find((key) => key.id !== DEPLOY_KEY);
    expect(hookLines).toEqual(
      [
        `${rootNew?.id} ci-deploy ${paths.root()}`,
        `${titled(ALICE, 'ci-deploy alice').find((k) => k.id !== ALICE_KEY)?.id} ci-deploy alice ${paths.alice()}`,
        `${newDeploy?.id} release ${paths.deploy()}`,
      ].sort(),
    );

    // Within the grace period: nothing more happens, the plan says until when.
    await advanceHours(23);
    const during = await pass(engine);
    expect(during.records.filter((r) => r.outcome !== 'skipped')).toEqual([]);
    expect(during.decisions.find((d) => d.target.includes(`SSH key ${ROOT_KEY}`))?.reason).toMatch(
      /^skip: keep old key 100 until .*\(grace 1d\)$/,
    );
    expectRotated(true);

    await advanceHours(2);
    const after = await pass(engine);
    expect(after.records.filter((r) => r.decision.action === 'remove_old_key').map((r) => r.outcome)).toEqual([
      'done',
      'done',
      'done',
    ]);
    expectRotated(false);
    expectOthersUntouched();

    // Later passes change nothing: exactly one new key per old key stays.
    await advanceHours(24);
    await pass(engine);
    expectRotated(false);
    // The private key is on disk only: in no answer the engine gives (plan output, audit details), nor in what it keeps.
    const everything = `${JSON.stringify([plan, first, during, after])}\n${await redisText(harness.redis, harness.prefix)}`;
    expect(everything).not.toContain('PRIVATE KEY');
    expect(everything).not.toContain(readFileSync(paths.root(), 'utf8').split('\n')[2]);
  });

  it('without an administrator’s token, says so for another user’s keys and touches only its own', async () => {
    // alice's token: her own keys rotate, root's need an administrator.
    const engine = await app({
      token: USER_TOKEN,
      deploy: [],
      ssh: [
        '      - { user: self, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }',
        '      - { user: root, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }',
      ],
    });
    const result = await pass(engine);
    expect(result.decisions.find((d) => d.target === 'SSH keys of root')?.reason).toBe(
      "skip: another user's keys need an administrator's token",
    );
    expect(titled(ALICE, 'ci-deploy alice')).toHaveLength(2);
    expect(titled(ROOT, 'ci-deploy').map((key) => key.id)).toEqual([ROOT_KEY]);
    expect(sandbox.state.requestLog.filter((entry) => entry.path.includes(`/users/${ROOT}/keys`))).toEqual([]);
  });

  it('refuses to rotate when secrets_dir is missing, naming it, and uploads nothing', async () => {
    const missing = join(secrets, 'nope');
    const engine = await app({ secretsDir: missing });
    const result = await engine.get(EngineService).runPass('rotate', 'act', 'inline');
    expect(result.error).toBe(
      `secrets_dir ${missing} does not exist; policy rotate refuses to rotate keys until it is fixed`,
    );
    expect(sandbox.state.requestLog.filter((entry) => entry.method !== 'GET')).toEqual([]);
    expect(existsSync(missing)).toBe(false);
  });

  describe('interrupted at any step, ends with exactly one new key per old key', () => {
    /** Passes until every old key is gone (moving past the grace period), checking after each that no second new key appeared. */
    async function finish(
      engineApp: () => Promise<INestApplicationContext>,
      olds: { ssh: number[]; deploy: number[] } = { ssh: [ROOT_KEY, ALICE_KEY], deploy: [DEPLOY_KEY] },
    ): Promise<void> {
      const maxPasses = 30;
      for (let i = 0; i < maxPasses; i++) {
        const engine = await engineApp();
        await pass(engine);
        expect(titled(ROOT, 'ci-deploy').length).toBeLessThanOrEqual(2);
        expect(titled(ALICE, 'ci-deploy alice').length).toBeLessThanOrEqual(2);
        expect(deployKeys('release').length).toBeLessThanOrEqual(2);
        if (
          !olds.ssh.some((id) => sandbox.state.sshKeys.has(id)) &&
          !olds.deploy.some((id) => sandbox.state.deployKeys.has(id))
        )
          return;
        await advanceHours(13);
      }
      throw new Error(`not finished after ${maxPasses} passes`);
    }

    it('the app stopped and started again after every single step', async () => {
      let current: INestApplicationContext | undefined;
      await finish(async () => {
        if (current) await close(current);
        current = await app({ maxActions: 1, onRotate: 'true' });
        return current;
      });
      expectRotated(false);
      expectOthersUntouched();
    });

    it.each<[string, Record<string, unknown>]>([
      ['the upload of an SSH key fails', { method: 'POST', path: '/user/keys$', status: 500, times: 1 }],
      ['the upload for another user fails', { method: 'POST', path: `/users/${ALICE}/keys$`, status: 500, times: 1 }],
      [
        'the creation of the deploy key fails',
        { method: 'POST', path: '/projects/[^/]+/deploy_keys$', status: 500, times: 1 },
      ],
      [
        'enabling the deploy key on the second project fails',
        { method: 'POST', path: '/deploy_keys/\\d+/enable$', status: 500, times: 1 },
      ],
      [
        'setting can_push on the third project fails',
        { method: 'PUT', path: '/deploy_keys/\\d+$', status: 500, times: 1 },
      ],
      // Observe, then the upload's look for an earlier upload, then the verification's listing.
      ['the verification’s listing fails', { method: 'GET', path: '/user/keys$', sequence: ['pass', 'pass', 500] }],
      ['the connection resets on an upload', { method: 'POST', path: '/user/keys$', reset: true, times: 1 }],
      ['removing an old key fails', { method: 'DELETE', path: `/keys/${ROOT_KEY}$`, status: 500, times: 1 }],
      [
        'removing the old deploy key from one project fails',
        { method: 'DELETE', path: `/deploy_keys/${DEPLOY_KEY}$`, sequence: ['pass', 500] },
      ],
    ])('%s', async (_title, rule) => {
      await fault(rule);
      const engine = await app({ onRotate: 'true' });
      await finish(async () => engine);
      expectRotated(false);
      expectOthersUntouched();
    });

    it('on_rotate fails: reported, retried next pass, the old key kept until it succeeds', async () => {
      const marker = join(secrets, 'hook-ok');
      const engine = await app({ onRotate: `test -f ${marker}` });
      const first = await pass(engine);
      const hooks = first.records.filter((r) => r.decision.action === 'run_on_rotate');
      expect(hooks.map((r) => r.outcome)).toEqual(['failed', 'failed', 'failed']);
      for (const r of hooks)
        expect(r.detail).toMatch(
          /^on_rotate exited with code 1; retried next pass; the new key stays at .* and the old key is kept$/,
        );
      await advanceHours(48);
      const held = await pass(engine);
      expect(held.decisions.filter((d) => d.reason.includes('until on_rotate succeeds'))).toHaveLength(3);
      expectRotated(true);
      writeFileSync(marker, '');
      await finish(async () => engine);
      expectRotated(false);
    });

    it('an upload that reached the forge but whose answer was lost is adopted, not repeated', async () => {
      // One step per pass: the first pass only writes root's key.
      const engine = await app({ maxActions: 1, deploy: [], ssh: [SSH[0]] });
      await pass(engine);
      expect(titled(ROOT, 'ci-deploy')).toHaveLength(1);
      // As if the upload had reached the forge and the daemon died before recording the answer.
      const response = await call(sandbox.url, '/api/v4/user/keys', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { title: 'ci-deploy', key: readFileSync(`${paths.root()}.pub`, 'utf8').trim() },
      });
      expect(response.status).toBe(201);
      await finish(async () => engine, { ssh: [ROOT_KEY], deploy: [] });
      const rootKeys = titled(ROOT, 'ci-deploy');
      expect(rootKeys).toHaveLength(1);
      expectKeptPrivateHalf(rootKeys[0].key, paths.root());
    });
  });

  describe('after Redis lost its data, goes on as after a restart: no key uploaded twice, no key file overwritten', () => {
    /** What a Redis restarted without persistence leaves of this deployment: nothing. */
    const loseRedisData = (): Promise<void> => harness.clearRedis();
    const fileContents = () => [paths.root(), paths.alice(), paths.deploy()].map((path) => readFileSync(path, 'utf8'));

    it('lost after the keys were written, before anything was uploaded', async () => {
      // Every upload fails: the rotations stop at key_written, with the private keys on disk.
      await fault({ method: 'POST', path: '/keys$|/deploy_keys$', status: 503 });
      const engine = await app();
      await pass(engine);
      expect(titled(ROOT, 'ci-deploy')).toHaveLength(1);
      const written = fileContents();
      await call(sandbox.url, '/__sandbox/faults', { method: 'DELETE' });
      await loseRedisData();

      const restarted = await app();
      const result = await pass(restarted);
      expect(result.records.filter((r) => r.decision.action === 'write_key').map((r) => r.detail)).toEqual([
        expect.stringMatching(/^adopted the ssh-ed25519 key SHA256:\S+ already at /),
        expect.stringMatching(/^adopted the ssh-ed25519 key SHA256:\S+ already at /),
        expect.stringMatching(/^adopted the ssh-ed25519 key SHA256:\S+ already at /),
      ]);
      expect(fileContents()).toEqual(written);
      expectRotated(true);
    });

    it('lost after the upload, within the grace period: the keys on the forge are adopted, the old ones still go after grace', async () => {
      const engine = await app();
      await pass(engine);
      expectRotated(true);
      const written = fileContents();
      const uploads = () =>
        sandbox.state.requestLog.filter((entry) => entry.method === 'POST' && /\/(keys|deploy_keys)$/.test(entry.path))
          .length;
      const uploadsBefore = uploads();
      await close(engine);
      await loseRedisData();

      const restarted = await app();
      const again = await pass(restarted);
      expect(again.records.filter((r) => r.decision.action === 'upload_key').map((r) => r.detail)).toEqual([
        expect.stringMatching(/^adopted key already on the forge/),
        expect.stringMatching(/^adopted key already on the forge/),
        expect.stringMatching(/^adopted deploy key already on the forge/),
      ]);
      expect(uploads()).toBe(uploadsBefore);
      expect(fileContents()).toEqual(written);
      expectRotated(true);

      // The grace period counts from the verification after the loss: the old keys go a day after it.
      await advanceHours(25);
      await pass(restarted);
      expectRotated(false);
      expect(fileContents()).toEqual(written);
      expectOthersUntouched();
    });

    it('dropped for a reset forge: the key files written for the forge before it are kept aside, never adopted, and new keys written', async () => {
      await fault({ method: 'POST', path: '/keys$|/deploy_keys$', status: 503 });
      const engine = await app();
      await pass(engine);
      const earlier = fileContents();
      await call(sandbox.url, '/__sandbox/faults', { method: 'DELETE' });
      await close(engine);
      // What RecordsOwner leaves when the forge was reset: the records gone, the time it found so in the marker.
      await loseRedisData();
      await new DataMarker(harness.redis, testConfig({ prefix: harness.prefix })).markForgeChanged(
        new Date(Date.now() + 1),
        false,
      );

      const restarted = await app();
      const result = await pass(restarted);
      expect(result.records.filter((r) => r.decision.action === 'write_key').map((r) => r.detail)).toEqual([
        expect.stringMatching(/^ed25519 key SHA256:\S+ written to /),
        expect.stringMatching(/^ed25519 key SHA256:\S+ written to /),
        expect.stringMatching(/^ed25519 key SHA256:\S+ written to /),
      ]);
      fileContents().forEach((text, index) => expect(text).not.toBe(earlier[index]));
      [paths.root(), paths.alice(), paths.deploy()].forEach((path, index) => {
        const aside = readdirSync(dirname(path)).filter(
          (name) => name.startsWith(`${basename(path)}.closed-`) && !name.endsWith('.pub'),
        );
        expect(aside.map((name) => readFileSync(join(dirname(path), name), 'utf8'))).toEqual([earlier[index]]);
      });
      expectRotated(true);
    });

    it('lost after on_rotate ran: the hook does not run again for the same keys (its run is kept beside each key file)', async () => {
      const hookLog = join(secrets, 'hook-runs.log');
      const onRotate = `echo "$FORGEWARDEN_KEY_FINGERPRINT" >> ${hookLog}`;
      const hookRuns = () => readFileSync(hookLog, 'utf8').trim().split('\n').sort();
      const engine = await app({ onRotate });
      await pass(engine);
      expectRotated(true);
      const ranOnce = hookRuns();
      expect(ranOnce).toHaveLength(3);
      for (const path of [paths.root(), paths.alice(), paths.deploy()])
        expect(statSync(`${path}.on_rotate`).mode & 0o777).toBe(0o600);
      await close(engine);
      await loseRedisData();

      const restarted = await app({ onRotate });
      const again = await pass(restarted);
      expect(
        again.records.filter((r) => r.decision.action === 'run_on_rotate').map((r) => `${r.outcome}: ${r.detail}`),
      ).toEqual([
        expect.stringMatching(
          /^done: on_rotate already ran for key SHA256:\S+ at \S+ \(recorded in .+\.on_rotate\); not run again$/,
        ),
        expect.stringMatching(
          /^done: on_rotate already ran for key SHA256:\S+ at \S+ \(recorded in .+\.on_rotate\); not run again$/,
        ),
        expect.stringMatching(
          /^done: on_rotate already ran for key SHA256:\S+ at \S+ \(recorded in .+\.on_rotate\); not run again$/,
        ),
      ]);
      expect(hookRuns()).toEqual(ranOnce);

      // And the rotations still end as ever: the old keys go after the grace period.
      await advanceHours(25);
      await pass(restarted);
      expectRotated(false);
      expect(hookRuns()).toEqual(ranOnce);
    });

    it('never overwrites a file at the path that holds no readable key, and uploads nothing for that rotation', async () => {
      mkdirSync(join(secrets, 'rotate'), { recursive: true, mode: 0o700 });
      writeFileSync(paths.root(), "someone else's notes\n", { mode: 0o600 });
      const engine = await app();
      const result = await engine.get(EngineService).runPass('rotate', 'act', 'inline');
      const write = result.records.find(
        (r) => r.decision.action === 'write_key' && r.decision.target.includes(`SSH key ${ROOT_KEY}`),
      );
      expect(write?.outcome).toBe('failed');
      expect(write?.detail).toMatch(/holds no readable OpenSSH private key .*never overwritten/);
      expect(readFileSync(paths.root(), 'utf8')).toBe("someone else's notes\n");
      expect(titled(ROOT, 'ci-deploy').map((key) => key.id)).toEqual([ROOT_KEY]);
    });
  });
});
