import type { INestApplicationContext } from '@nestjs/common';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MovableClock } from '../../src/clock';
import type { PassResult } from '../../src/engine/engine.service';
import { AuditTrail } from '../../src/engine/stores/audit';
import { parseRecord, type RotationRecord } from '../../src/policies/key-rotation/key-rotation.record';
import { keyRotationPolicy } from '../../src/policies/key-rotation/key-rotation.schema';
import type { World } from '../../src/sandbox';
import { aPublicKey } from '../support/builders/keys';
import { useEngineHarness } from '../support/engine-harness';
import { asPerson, control } from '../support/person';
import { baseWorld, MAINTAINER_TOKEN } from '../support/world-builders';

/**
 * Unseen is not gone (docs/architecture.md): a rotation whose projects the token cannot see now (a 404 or a 403: the
 * project hidden, moved to a group the token cannot see, a membership lowered) is neither closed nor continued there.
 * Its new key is never taken for gone while it may still be enabled, so no second new key is made and on_rotate runs
 * once; projects are followed by id through a rename or a transfer; and on_rotate waits until every holder is covered.
 */

const HOUR_MS = 3_600_000;
const API = 1;
const WEB = 2;
const WORKER = 3;
const LEGACY = 4;
const OPS = 5;
const DEPLOY_KEY = 200;

/**
 * root's SSH key expiring in 5 days; the deploy key (100 days old) on acme/api (push), acme/web, acme/worker (push) and
 * attic/legacy, which no policy selects; acme/ops without keys; group vault, which mia cannot see.
 */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: (base.users ?? []).map((user) =>
      user.username === 'root'
        ? {
            ...user,
            ssh_keys: [
              { id: 100, title: 'ci-deploy', key: aPublicKey('root-ci'), created_at: 'now-85d', expires_at: 'now+5d' },
            ],
          }
        : user,
    ),
    groups: [
      ...(base.groups ?? []),
      { id: 11, path: 'vault', name: 'Vault' },
      { id: 12, path: 'attic', name: 'Attic' },
    ],
    projects: [
      ...(base.projects ?? []),
      { id: WORKER, path: 'worker', namespace: 'acme' },
      { id: LEGACY, path: 'legacy', namespace: 'attic' },
      { id: OPS, path: 'ops', namespace: 'acme' },
    ],
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
          { project: 'attic/legacy', can_push: false },
        ],
      },
    ],
  };
}

describe('key_rotation: what the token cannot see is not gone', () => {
  const harness = useEngineHarness({ name: 'key-rotation-unseen', world, policyTypes: [keyRotationPolicy] });
  let clock: MovableClock;
  let secrets: string;
  let hookLog: string;

  beforeEach(() => {
    clock = Object.assign(new MovableClock(harness.sandbox.state.clock.now()), { sleep: async () => undefined });
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-unseen-'));
    hookLog = join(secrets, 'hook.log');
  });

  afterEach(() => {
    rmSync(secrets, { recursive: true, force: true });
  });

  const app = (projects: string, options: { token?: string; ssh?: string } = {}): Promise<INestApplicationContext> =>
    harness.app({
      clock,
      token: options.token,
      policies: [
        '  - name: rotate',
        '    type: key_rotation',
        '    interval: 1h',
        `    secrets_dir: "${secrets}"`,
        ...(options.ssh ? ['    ssh_keys:', options.ssh] : []),
        '    deploy_keys:',
        `      - { projects: ${projects}, titles: ["^release"], rotate_after: 90d, grace: 1d }`,
        `    on_rotate: ${JSON.stringify(`echo "$FORGEWARDEN_KEY_ID" >> ${hookLog}`)}`,
      ],
    });
  const pass = (engine: INestApplicationContext, mode: 'act' | 'plan' = 'act'): Promise<PassResult> =>
    harness.pass(engine, 'rotate', mode);
  const sandbox = () => harness.sandbox;

  async function advanceHours(hours: number): Promise<void> {
    expect(await control(sandbox(), 'POST', '/clock', { advance_seconds: hours * 3600 })).toBe(200);
    clock.advance(hours * HOUR_MS);
  }

  const deployKeyOn = (id: number): Record<number, boolean> | undefined => {
    const key = sandbox().state.deployKeys.get(id);
    return key ? Object.fromEntries([...key.projects].map(([project, link]) => [project, link.can_push])) : undefined;
  };
  const newDeployKeys = () => [...sandbox().state.deployKeys.keys()].filter((id) => id !== DEPLOY_KEY);
  const hookRuns = () => (existsSync(hookLog) ? readFileSync(hookLog, 'utf8').trim().split('\n') : []);
  const acted = (result: PassResult) =>
    result.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`);
  const record = async (id: string): Promise<RotationRecord | undefined> =>
    parseRecord((await harness.redis.get(`${harness.prefix}:state:rotate:rotation:${id}`)) ?? undefined);
  const hide = async (project: string) =>
    expect(await control(sandbox(), 'POST', '/access', { user: 'root', project, level: 0 })).toBe(200);

  it('an administrator’s token loses sight of every project of a rotation: it is not closed, the instance listing accounts for the new key, and no second key or hook follows', async () => {
    const engine = await app('[acme/api, acme/web, acme/worker]');
    await pass(engine);
    const [fresh] = newDeployKeys();
    expect(hookRuns()).toEqual([String(fresh)]);
    for (const project of ['acme/api', 'acme/web', 'acme/worker']) await hide(project);

    await advanceHours(2);
    const blind = await pass(engine);
    expect(blind.unobserved?.map((entry) => entry.target)).toEqual([
      'project acme/api',
      'project acme/web',
      'project acme/worker',
    ]);
    expect(acted(blind)).toEqual([]);
    expect(
      blind.decisions.filter((d) => d.params.rotation === `deploy-${DEPLOY_KEY}`).map((d) => [d.reason, d.repairs]),
    ).toEqual([
      [
        `skip: new key ${fresh} is on none of the projects read; acme/api, acme/web, acme/worker could not be read; the rotation waits (what the token cannot see is not gone), and no new key is made meanwhile`,
        undefined,
      ],
      [
        `skip: new key ${fresh} may still be enabled on acme/api, acme/web, acme/worker, which the token cannot see now; the instance's deploy keys list it on acme/api, acme/web, acme/worker`,
        'key_unaccounted',
      ],
    ]);
    expect(blind.harm).toEqual([
      expect.objectContaining({ kind: 'key_unaccounted', target: expect.stringMatching(/^deploy key 200 "release"/) }),
    ]);
    expect(await record(`deploy-${DEPLOY_KEY}`)).toMatchObject({ step: 'hooked', new_key_id: fresh });

    // Grace passes while out of sight: nothing is removed, nothing closed.
    await advanceHours(25);
    expect(acted(await pass(engine))).toEqual([]);
    expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true, [LEGACY]: false });

    // Seen again: the same rotation goes on, with its one new key.
    expect(await control(sandbox(), 'DELETE', '/access')).toBe(204);
    const seen = await pass(engine);
    expect(acted(seen)).toEqual(['remove_old_key:done']);
    expect(seen.harm).toBeUndefined();
    expect(newDeployKeys()).toEqual([fresh]);
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
    expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [LEGACY]: false });
    expect(hookRuns()).toEqual([String(fresh)]);
  });

  it('a project that gains the old key after the rotation was done gets the same new key and loses the old one: no second new key, no second hook', async () => {
    const engine = await app('[acme/api, acme/web, acme/worker, acme/ops]');
    await pass(engine);
    const [fresh] = newDeployKeys();
    await advanceHours(25);
    await pass(engine);
    expect(await record(`deploy-${DEPLOY_KEY}`)).toMatchObject({ step: 'done' });
    // attic/legacy, which the policy does not select, still holds the old key; a person enables it on acme/ops.
    expect((await asPerson(sandbox(), 'POST', `/projects/${OPS}/deploy_keys/${DEPLOY_KEY}/enable`)).status).toBe(201);

    const again = await pass(engine);
    expect(acted(again)).toEqual(['enable_key:done', 'remove_old_key:done']);
    expect(again.records[1]?.decision.reason).toBe(
      `remove old key 200 from acme/ops again: it came back after rotation deploy-200 was done, and new key ${fresh} is there now`,
    );
    expect(newDeployKeys()).toEqual([fresh]);
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true, [OPS]: false });
    expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [LEGACY]: false });
    expect(hookRuns()).toEqual([String(fresh)]);
  });

  it('a token without the administrator flag loses sight of the projects moved to another group: the key is named as open harm, and the projects are followed by id when they come back renamed', async () => {
    // mia maintains acme's projects, and cannot see group vault.
    const engine = await app('["acme/*", "vault/*"]', { token: MAINTAINER_TOKEN });
    await pass(engine);
    const [fresh] = newDeployKeys();
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
    for (const id of [API, WEB, WORKER])
      expect((await asPerson(sandbox(), 'PUT', `/projects/${id}/transfer`, { namespace: 'vault' })).status).toBe(200);

    const blind = await pass(engine);
    expect(acted(blind)).toEqual([]);
    expect(blind.harm).toEqual([
      expect.objectContaining({
        kind: 'key_unaccounted',
        reason: `skip: new key ${fresh} may still be enabled on acme/api, acme/web, acme/worker, which the token cannot see now`,
      }),
    ]);
    // Kept open, with the ids of the projects the new key was put on.
    expect(await record(`deploy-${DEPLOY_KEY}`)).toMatchObject({
      step: 'hooked',
      project_ids: { 'acme/api': API, 'acme/web': WEB, 'acme/worker': WORKER },
    });

    // Back in acme, acme/web renamed acme/web-app on the way; discovery lists the group afresh.
    expect((await asPerson(sandbox(), 'PUT', `/projects/${WEB}`, { path: 'web-app' })).status).toBe(200);
    for (const id of [API, WEB, WORKER])
      expect((await asPerson(sandbox(), 'PUT', `/projects/${id}/transfer`, { namespace: 'acme' })).status).toBe(200);
    await harness.redis.del(...(await harness.redis.keys(`${harness.prefix}:discovery:*`)));
    const back = await pass(engine);
    expect(back.unobserved).toBeUndefined();
    expect(acted(back)).toEqual([]);
    expect(back.harm).toBeUndefined();

    await advanceHours(25);
    const done = await pass(engine);
    expect(done.records.find((r) => r.decision.action === 'remove_old_key')?.decision.reason).toBe(
      'remove old key 200 from acme/api, acme/web-app, acme/worker: grace 1d passed',
    );
    expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [LEGACY]: false });
    expect(newDeployKeys()).toEqual([fresh]);
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
    expect(hookRuns()).toEqual([String(fresh)]);
  });

  it('on_rotate waits while a selected project answers 403, named in the audit trail and plan, and runs once it is readable and covered', async () => {
    // root is a reporter on acme/web: its deploy keys answer 403.
    expect(await control(sandbox(), 'POST', '/access', { user: 'root', project: 'acme/web', level: 20 })).toBe(200);
    const engine = await app('[acme/api, acme/web, acme/worker]');
    const first = await pass(engine);
    const [fresh] = newDeployKeys();
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
    expect(
      first.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`),
    ).toEqual(['write_key:done', 'upload_key:done', 'enable_key:done', 'verify_key:done', 'run_on_rotate:stale']);
    const waits = `new key ${fresh} is not listed on acme/web (not readable now: GET projects/acme%2Fweb/deploy_keys?page=1&per_page=100 → 403: 403 Forbidden): on_rotate waits until every holder has it`;
    expect(first.records.find((r) => r.decision.action === 'run_on_rotate')?.detail).toBe(waits);
    expect(hookRuns()).toEqual([]);
    expect((await engine.get(AuditTrail).read(0)).filter((entry) => entry.action === 'run_on_rotate')).toEqual([
      expect.objectContaining({ outcome: 'stale', detail: waits }),
    ]);
    const plan = await pass(engine, 'plan');
    expect(plan.decisions.find((d) => d.action === 'run_on_rotate')?.reason).toBe(
      `run on_rotate for new key ${fresh} once every holder has it; not readable now: acme/web`,
    );

    // Readable again: acme/web gets the new key first, then the hook runs, once.
    expect(await control(sandbox(), 'DELETE', '/access')).toBe(204);
    const second = await pass(engine);
    expect(acted(second)).toEqual(['enable_key:done', 'run_on_rotate:done']);
    expect(hookRuns()).toEqual([String(fresh)]);
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
  });

  it("tells the kinds' new keys apart: a deploy key listed under the id of the SSH rotation's new key, its text unreadable, is rotated as the deploy key it is", async () => {
    const engine = await app('[acme/api]', {
      ssh: '      - { user: self, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }',
    });
    const state = sandbox().state;
    await pass(engine);
    const sshNew = [...state.sshKeys.values()].find((key) => key.user_id === 1 && key.id !== 100)?.id as number;
    // A forge that numbers deploy keys apart from SSH keys: an old deploy key under that very id, its text unreadable.
    state.deployKeys.delete(DEPLOY_KEY);
    state.deployKeys.set(sshNew, {
      id: sshNew,
      title: 'release',
      key: 'ssh-ed25519 not-base64!',
      normalized: '',
      fingerprint: '',
      fingerprint_sha256: '',
      created_at: '2025-01-01T00:00:00.000Z',
      expires_at: null,
      projects: new Map([[API, { can_push: true }]]),
    });

    const second = await pass(engine);
    expect(second.decisions.filter((d) => d.target.startsWith(`deploy key ${sshNew} `)).map((d) => d.action)).toEqual([
      'write_key',
      'upload_key',
      'verify_key',
      'run_on_rotate',
    ]);
    expect(second.decisions.find((d) => d.target.startsWith(`root's SSH key ${sshNew} `))?.reason).toBe(
      'skip: new key of rotation ssh-1-100',
    );
    expect([...state.deployKeys.values()].filter((key) => key.id !== sshNew && key.projects.has(API))).toHaveLength(1);
  });
});
