import type { INestApplicationContext } from '@nestjs/common';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MovableClock } from '../../src/clock';
import type { PassResult } from '../../src/engine/engine.service';
import { EngineGauges } from '../../src/engine/gauges';
import { AuditTrail } from '../../src/engine/stores/audit';
import { MetricsService } from '../../src/metrics/metrics.service';
import { parseRecord, REVOKED_FIRST, type RotationRecord } from '../../src/policies/key-rotation/key-rotation.record';
import { keyRotationPolicy } from '../../src/policies/key-rotation/key-rotation.schema';
import type { World } from '../../src/sandbox';
import { aPublicKey } from '../support/builders/keys';
import { useEngineHarness } from '../support/engine-harness';
import { asPerson, control, whileHeld } from '../support/person';
import { baseWorld } from '../support/world-builders';

/**
 * A person's revocation wins (docs/policies.md, key_rotation): a person who takes the old key away from a holder during
 * a rotation means that holder to lose access, so the bot's new key leaves it too. That key is the bot's own harm
 * (`key_left_after_revocation`): its removal is a repair, run first, never parked, shown at once until mended. The
 * person acts while the bot's pass is held at the forge's door, so the moment is certain.
 */

const HOUR_MS = 3_600_000;
const ALICE = 3;
const API = 1;
const WEB = 2;
const WORKER = 3;
const ALICE_KEY = 101;
const DEPLOY_KEY = 200;

/** alice's expired SSH key, and the 100-day-old deploy key on acme/api (push), acme/web and acme/worker (push). */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: (base.users ?? []).map((user) =>
      user.username === 'alice'
        ? {
            ...user,
            ssh_keys: [{ id: ALICE_KEY, title: 'ci-deploy alice', key: aPublicKey('alice-ci'), expires_at: 'now-1d' }],
          }
        : user,
    ),
    projects: [...(base.projects ?? []), { id: WORKER, path: 'worker', namespace: 'acme' }],
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
    ],
  };
}

const ALICE_SSH = '      - { user: alice, titles: ["^ci-deploy"], rotate_before: 14d, lifetime: 90d, grace: 1d }';
const THREE =
  '      - { projects: [acme/api, acme/web, acme/worker], titles: ["^release"], rotate_after: 90d, grace: 1d }';
const REVOKED = "a person took old key 200 away from it during the rotation, and a person's revocation wins";

describe("key_rotation: a person's revocation wins, as a repair of the bot's own harm", () => {
  const harness = useEngineHarness({ name: 'key-rotation-own-harm', world, policyTypes: [keyRotationPolicy] });
  let clock: MovableClock;
  let secrets: string;

  beforeEach(() => {
    // A repair tried again within the pass waits on this clock: no real sleeping in a test.
    clock = Object.assign(new MovableClock(harness.sandbox.state.clock.now()), { sleep: async () => undefined });
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-harm-'));
  });

  afterEach(() => {
    rmSync(secrets, { recursive: true, force: true });
  });

  const app = (entries: { ssh?: string[]; deploy?: string[] }): Promise<INestApplicationContext> =>
    harness.app({
      clock,
      policies: [
        '  - name: rotate',
        '    type: key_rotation',
        '    interval: 1h',
        `    secrets_dir: "${secrets}"`,
        ...(entries.ssh ? ['    ssh_keys:', ...entries.ssh] : []),
        ...(entries.deploy ? ['    deploy_keys:', ...entries.deploy] : []),
      ],
    });
  const pass = (engine: INestApplicationContext): Promise<PassResult> => harness.pass(engine, 'rotate');
  const sandbox = () => harness.sandbox;

  async function advanceHours(hours: number): Promise<void> {
    expect(await control(sandbox(), 'POST', '/clock', { advance_seconds: hours * 3600 })).toBe(200);
    clock.advance(hours * HOUR_MS);
  }

  /** Project id → can_push of deploy key `id`; undefined when the key is on no project. */
  const deployKeyOn = (id: number): Record<number, boolean> | undefined => {
    const key = sandbox().state.deployKeys.get(id);
    return key ? Object.fromEntries([...key.projects].map(([project, link]) => [project, link.can_push])) : undefined;
  };
  const newDeployKeys = () => [...sandbox().state.deployKeys.keys()].filter((id) => id !== DEPLOY_KEY);
  const sshKeyIds = (userId: number) =>
    [...sandbox().state.sshKeys.values()].filter((key) => key.user_id === userId).map((key) => key.id);
  const acted = (result: PassResult) =>
    result.records
      .filter((r) => r.outcome !== 'skipped')
      .map((r) => `${r.decision.action}:${r.outcome} ${r.decision.reason}`);
  const record = async (id: string): Promise<RotationRecord | undefined> =>
    parseRecord((await harness.redis.get(`${harness.prefix}:state:rotate:rotation:${id}`)) ?? undefined);
  async function harmGauge(engine: INestApplicationContext, kind: string): Promise<number | undefined> {
    await engine.get(EngineGauges).refreshHarm();
    const values =
      (await engine.get(MetricsService).registry.getSingleMetric('forgewarden_harm_open')?.get())?.values ?? [];
    return values.find((value) => value.labels.policy === 'rotate' && value.labels.kind === kind)?.value;
  }

  it('a person takes the old deploy key away from acme/web during grace: the new key leaves acme/web in that pass, saying why, and the rotation goes on for the others', async () => {
    const engine = await app({ deploy: [THREE] });
    await pass(engine);
    const [fresh] = newDeployKeys();
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });

    await advanceHours(2);
    // The person acts while the bot's read of acme/web's deploy keys waits at the forge's door.
    const during = await whileHeld(
      sandbox(),
      { method: 'GET', path: '^/api/v4/projects/acme%2Fweb/deploy_keys$' },
      () => pass(engine),
      async () => {
        expect((await asPerson(sandbox(), 'DELETE', `/projects/${WEB}/deploy_keys/${DEPLOY_KEY}`)).status).toBe(204);
      },
    );
    expect(acted(during)).toEqual([`remove_new_key:done remove new key ${fresh} from acme/web: ${REVOKED}`]);
    expect(during.records.find((r) => r.decision.action === 'remove_new_key')?.decision.repairs).toBe(
      'key_left_after_revocation',
    );
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
    expect(during.harm).toBeUndefined();
    // The audit trail says what was taken away, and why.
    const audit = await engine.get(AuditTrail).read(0);
    expect(audit.filter((entry) => entry.action === 'remove_new_key')).toEqual([
      expect.objectContaining({
        outcome: 'done',
        reason: `remove new key ${fresh} from acme/web: ${REVOKED}`,
        detail: `removed new key ${fresh} from acme/web, as old key 200 was taken away there`,
      }),
    ]);
    expect(await record(`deploy-${DEPLOY_KEY}`)).toMatchObject({
      step: 'verified',
      revoked_on: ['acme/web'],
      new_key_on: ['acme/api', 'acme/worker'],
    });

    // After grace: the old key leaves acme/api and acme/worker; acme/web keeps neither key, as the person meant.
    await advanceHours(25);
    expect(acted(await pass(engine))).toEqual([
      'remove_old_key:done remove old key 200 from acme/api, acme/worker: grace 1d passed',
    ]);
    expect(deployKeyOn(DEPLOY_KEY)).toBeUndefined();
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
    expect(await record(`deploy-${DEPLOY_KEY}`)).toMatchObject({ step: 'done' });
  });

  it('a repair the forge refuses is shown at once and tried again within the pass and at every pass, never parked', async () => {
    const engine = await app({ deploy: [THREE] });
    await pass(engine);
    const [fresh] = newDeployKeys();
    await advanceHours(2);
    expect((await asPerson(sandbox(), 'DELETE', `/projects/${WEB}/deploy_keys/${DEPLOY_KEY}`)).status).toBe(204);
    // The bot's removals of the new key from acme/web are refused three times: a pass's three tries.
    expect(
      await control(sandbox(), 'POST', '/faults', {
        method: 'DELETE',
        path: `/projects/[^/]+/deploy_keys/${fresh}$`,
        status: 403,
        times: 3,
      }),
    ).toBe(201);

    const refused = await pass(engine);
    expect(
      refused.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`),
    ).toEqual(['remove_new_key:failed']);
    expect(refused.records[0]?.detail).toMatch(
      /^DELETE projects\/acme%2Fweb\/deploy_keys\/\d+ → 403: .*; a repair of the bot's own harm is tried again, never parked$/,
    );
    const deletes = () =>
      sandbox().state.requestLog.filter(
        (entry) => entry.method === 'DELETE' && entry.path === `/api/v4/projects/acme%2Fweb/deploy_keys/${fresh}`,
      );
    expect(deletes().map((entry) => entry.status)).toEqual([403, 403, 403]);
    expect(refused.harm).toEqual([
      expect.objectContaining({
        kind: 'key_left_after_revocation',
        reason: `remove new key ${fresh} from acme/web: ${REVOKED}`,
      }),
    ]);
    expect(await harmGauge(engine, 'key_left_after_revocation')).toBe(1);
    expect(refused.nextPassAt!.getTime() - clock.now()).toBeLessThanOrEqual(120_000);

    // The next pass sends it again (a parked refusal would wait an hour) and mends it.
    const mended = await pass(engine);
    expect(acted(mended)).toEqual([`remove_new_key:done remove new key ${fresh} from acme/web: ${REVOKED}`]);
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
    expect(mended.harm).toBeUndefined();
    expect(await harmGauge(engine, 'key_left_after_revocation')).toBe(0);
  });

  it('an administrator takes alice’s old SSH key away during the rotation: the new key the bot uploaded for her goes too, and the rotation closes saying why', async () => {
    const engine = await app({ ssh: [ALICE_SSH] });
    await pass(engine);
    const [fresh] = sshKeyIds(ALICE).filter((id) => id !== ALICE_KEY);
    expect(fresh).toBeDefined();

    await advanceHours(2);
    const during = await whileHeld(
      sandbox(),
      { method: 'GET', path: `^/api/v4/users/${ALICE}/keys$` },
      () => pass(engine),
      async () => {
        expect((await asPerson(sandbox(), 'DELETE', `/users/${ALICE}/keys/${ALICE_KEY}`)).status).toBe(204);
      },
    );
    expect(acted(during)).toEqual([
      `remove_new_key:done remove new key ${fresh} from alice: a person took old key ${ALICE_KEY} away from it during the rotation, and a person's revocation wins`,
    ]);
    expect(sshKeyIds(ALICE)).toEqual([]);

    // Nothing of the rotation is left to do: it closes, naming the revocation, and no new key is made.
    const closing = await pass(engine);
    expect(acted(closing)).toEqual([
      `close_rotation:done close: a person took old key ${ALICE_KEY} away from alice (user 3) during the rotation, and new key ${fresh} left with it (a person's revocation wins); nothing on the forge is changed, and the next pass decides afresh`,
    ]);
    expect(acted(await pass(engine))).toEqual([]);
    expect(sshKeyIds(ALICE)).toEqual([]);
  });

  it('an upload whose answer was lost, then alice’s old key taken away by a person: the uploaded key is adopted and goes too, never left untracked', async () => {
    const engine = await app({ ssh: [ALICE_SSH] });
    // The upload reaches the forge, but its answer is lost on the way back.
    expect(
      await control(sandbox(), 'POST', '/faults', {
        method: 'POST',
        path: `/users/${ALICE}/keys$`,
        status: 502,
        after: true,
        times: 1,
      }),
    ).toBe(201);
    await pass(engine);
    const [uploaded] = sshKeyIds(ALICE).filter((id) => id !== ALICE_KEY);
    expect(uploaded).toBeDefined();
    expect((await asPerson(sandbox(), 'DELETE', `/users/${ALICE}/keys/${ALICE_KEY}`)).status).toBe(204);
    for (let i = 0; i < 4 && sshKeyIds(ALICE).length > 0; i++) {
      await advanceHours(1);
      await pass(engine);
    }
    // The key the bot made is never left live where a person took the old one away.
    expect(sshKeyIds(ALICE)).toEqual([]);
    const removals = sandbox().state.requestLog.filter(
      (entry) => entry.method === 'DELETE' && entry.headers['user-agent']?.startsWith('forgewarden'),
    );
    expect(removals.map((entry) => entry.path)).toEqual([`/api/v4/users/${ALICE}/keys/${uploaded}`]);
  });

  it('the bot’s own removal of the old key, its answer lost and repeated into a 404, is no person’s revocation: the new key stays', async () => {
    const engine = await app({ ssh: [ALICE_SSH] });
    await pass(engine);
    const [fresh] = sshKeyIds(ALICE).filter((id) => id !== ALICE_KEY);
    await advanceHours(25);
    // The removal reaches the forge, but its answer is lost: the client repeats it and meets its own work (404).
    expect(
      await control(sandbox(), 'POST', '/faults', {
        method: 'DELETE',
        path: `/users/${ALICE}/keys/${ALICE_KEY}$`,
        status: 502,
        after: true,
        times: 1,
      }),
    ).toBe(201);
    const removal = await pass(engine);
    expect(
      removal.records.filter((r) => r.outcome !== 'skipped').map((r) => [r.decision.action, r.outcome, r.detail]),
    ).toEqual([['remove_old_key', 'done', `old key ${ALICE_KEY} removed (already gone: user)`]]);
    expect(await record(`ssh-${ALICE}-${ALICE_KEY}`)).toMatchObject({ step: 'done', old_removed_on: ['(holder)'] });
    expect(acted(await pass(engine))).toEqual([]);
    expect(sshKeyIds(ALICE)).toEqual([fresh]);
  });

  it('a person takes alice’s old SSH key away after grace, before the bot removes it: the removal is stale, sends nothing, and the new key goes instead', async () => {
    const engine = await app({ ssh: [ALICE_SSH] });
    await pass(engine);
    const [fresh] = sshKeyIds(ALICE).filter((id) => id !== ALICE_KEY);
    await advanceHours(25);
    // The pass decides remove_old_key from its observation; the person acts while its precondition's read waits.
    const removal = await whileHeld(
      sandbox(),
      { method: 'GET', path: `^/api/v4/users/${ALICE}/keys$`, after: 1 },
      () => pass(engine),
      async () => {
        expect((await asPerson(sandbox(), 'DELETE', `/users/${ALICE}/keys/${ALICE_KEY}`)).status).toBe(204);
      },
    );
    expect(
      removal.records.filter((r) => r.outcome !== 'skipped').map((r) => [r.decision.action, r.outcome, r.detail]),
    ).toEqual([
      ['remove_old_key', 'stale', `old key ${ALICE_KEY} of alice is gone, not removed by the bot: ${REVOKED_FIRST}`],
    ]);
    expect(
      sandbox().state.requestLog.filter(
        (entry) => entry.method === 'DELETE' && entry.headers['user-agent']?.startsWith('forgewarden'),
      ),
    ).toEqual([]);
    expect(acted(await pass(engine))).toEqual([
      `remove_new_key:done remove new key ${fresh} from alice: a person took old key ${ALICE_KEY} away from it during the rotation, and a person's revocation wins`,
    ]);
    expect(sshKeyIds(ALICE)).toEqual([]);
  });

  it('a person takes the old deploy key away from acme/web after grace, before the bot removes it: the removal is stale, and the new key leaves acme/web instead', async () => {
    const engine = await app({ deploy: [THREE] });
    await pass(engine);
    const [fresh] = newDeployKeys();
    await advanceHours(25);
    const removal = await whileHeld(
      sandbox(),
      { method: 'GET', path: '^/api/v4/projects/acme%2Fweb/deploy_keys$', after: 1 },
      () => pass(engine),
      async () => {
        expect((await asPerson(sandbox(), 'DELETE', `/projects/${WEB}/deploy_keys/${DEPLOY_KEY}`)).status).toBe(204);
      },
    );
    expect(
      removal.records.filter((r) => r.outcome !== 'skipped').map((r) => [r.decision.action, r.outcome, r.detail]),
    ).toEqual([
      [
        'remove_old_key',
        'stale',
        `old key ${DEPLOY_KEY} is gone from acme/web, not removed by the bot: ${REVOKED_FIRST}`,
      ],
    ]);
    expect(deployKeyOn(DEPLOY_KEY)).toEqual({ [API]: true, [WORKER]: true });
    const next = await pass(engine);
    expect(acted(next)).toContain(`remove_new_key:done remove new key ${fresh} from acme/web: ${REVOKED}`);
    await pass(engine);
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WORKER]: true });
    expect(deployKeyOn(DEPLOY_KEY)).toBeUndefined();
  });

  it('a person who gives the old key back before the repair runs keeps the rotation going there: the repair is stale and sends nothing', async () => {
    const engine = await app({ deploy: [THREE] });
    await pass(engine);
    const [fresh] = newDeployKeys();
    await advanceHours(2);
    expect((await asPerson(sandbox(), 'DELETE', `/projects/${WEB}/deploy_keys/${DEPLOY_KEY}`)).status).toBe(204);
    // The repair's precondition reads acme/web again (after the observe's read); the person enables the old key then.
    const result = await whileHeld(
      sandbox(),
      { method: 'GET', path: '^/api/v4/projects/acme%2Fweb/deploy_keys$', after: 1 },
      () => pass(engine),
      async () => {
        expect((await asPerson(sandbox(), 'POST', `/projects/${WEB}/deploy_keys/${DEPLOY_KEY}/enable`)).status).toBe(
          201,
        );
      },
    );
    expect(
      result.records.filter((r) => r.outcome !== 'skipped').map((r) => [r.decision.action, r.outcome, r.detail]),
    ).toEqual([
      ['remove_new_key', 'stale', 'old key 200 is there again: the new key stays, and the rotation goes on there'],
    ]);
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
    await advanceHours(25);
    await pass(engine);
    expect(deployKeyOn(DEPLOY_KEY)).toBeUndefined();
    expect(deployKeyOn(fresh)).toEqual({ [API]: true, [WEB]: false, [WORKER]: true });
  });
});
