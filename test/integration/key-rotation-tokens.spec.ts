import type { INestApplicationContext } from '@nestjs/common';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PassResult } from '../../src/engine/engine.service';
import { keyRotationPolicy } from '../../src/policies/key-rotation/key-rotation.schema';
import type { RunningSandbox, World } from '../../src/sandbox';
import type { AccessTokenRecord } from '../../src/sandbox/access-tokens-state';
import { MovableClock } from '../../src/clock';
import { acmeGroup, apiProject, baseWorld, MAINTAINER_TOKEN, webProject } from '../support/world-builders';
import { call } from '../support/sandbox-http';
import { useEngineHarness } from '../support/engine-harness';
import { MemoryStream } from '../support/memory-stream';
import { redisText } from '../support/redis-text';

const HOUR_MS = 3_600_000;
const API_TOKEN = 602;
const WEB_TOKEN = 603;
const GROUP_TOKEN = 601;
const OLD_VALUES = ['glpat-api-deploy-bot-001', 'glpat-web-deploy-bot-001', 'glpat-acme-group-bot-001'];

/** acme/api's `deploy` token expires in 5 days, acme/web's in 60; the group acme's `group-ci` in 3. */
function world(): World {
  return baseWorld({
    groups: [
      acmeGroup({
        access_tokens: [
          {
            token: OLD_VALUES[2],
            id: GROUP_TOKEN,
            name: 'group-ci',
            scopes: ['read_api'],
            access_level: 'developer',
            expires_at: 'now+3d',
          },
        ],
      }),
    ],
    projects: [
      apiProject({
        access_tokens: [
          {
            token: OLD_VALUES[0],
            id: API_TOKEN,
            name: 'deploy',
            scopes: ['api', 'read_registry'],
            access_level: 'developer',
            expires_at: 'now+5d',
          },
        ],
      }),
      webProject({
        access_tokens: [
          { token: OLD_VALUES[1], id: WEB_TOKEN, name: 'deploy', scopes: ['api'], expires_at: 'now+60d' },
        ],
      }),
    ],
  });
}

/**
 * key_rotation's tokens against the sandbox over HTTP with a real Redis: project and group access tokens rotated and
 * delivered to CI/CD variables, files and on_rotate, verified, and the traps of tokens (a lost answer, a crash after
 * the answer, reuse detection, a person acting mid-rotation, replicas) met without losing a value or the family.
 */
describe('key_rotation of access tokens against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'key-rotation-tokens', world, policyTypes: [keyRotationPolicy] });
  let sandbox: RunningSandbox;
  let clock: MovableClock;
  let secrets: string;
  let logs: MemoryStream;

  beforeEach(() => {
    sandbox = harness.sandbox;
    clock = new MovableClock(sandbox.state.clock.now());
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-tokens-'));
    logs = new MemoryStream();
  });

  afterEach(() => rmSync(secrets, { recursive: true, force: true }));

  interface AppOptions {
    strategy?: 'rotate' | 'overlap';
    deliver?: string[];
    projects?: string;
    groups?: boolean;
    beforeExpiry?: string;
  }

  function app(options: AppOptions = {}): Promise<INestApplicationContext> {
    const deliver = options.deliver ?? ['          - variable: { key: DEPLOY_TOKEN }'];
    const policies = [
      '  - name: rotate',
      '    type: key_rotation',
      '    interval: 1h',
      `    secrets_dir: "${secrets}"`,
      `    on_rotate: "cat > ${join(secrets, 'hook-$FORGEWARDEN_TOKEN_ID')}"`,
      '    project_access_tokens:',
      `      - projects: ${options.projects ?? '[acme/api, acme/web]'}`,
      '        names: ["^deploy$"]',
      `        before_expiry: ${options.beforeExpiry ?? '14d'}`,
      '        lifetime: 90d',
      `        strategy: ${options.strategy ?? 'rotate'}`,
      '        grace: 1d',
      '        deliver:',
      ...deliver,
      ...(options.groups
        ? [
            '    group_access_tokens:',
            '      - { groups: [acme], names: ["^group-ci$"], before_expiry: 7d, lifetime: 30d, deliver: [{ variable: { key: GROUP_TOKEN, environment_scope: production, masked_and_hidden: true } }] }',
          ]
        : []),
    ];
    return harness.app({ policies, clock, logs });
  }

  const pass = (engine: INestApplicationContext, mode: 'act' | 'plan' = 'act'): Promise<PassResult> =>
    harness.pass(engine, 'rotate', mode);
  const acted = (result: PassResult) =>
    result.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`);

  async function advanceHours(hours: number): Promise<void> {
    const response = await call(sandbox.url, '/__sandbox/clock', {
      method: 'POST',
      body: { advance_seconds: hours * 3600 },
    });
    expect(response.status).toBe(200);
    clock.advance(hours * HOUR_MS);
  }

  async function control(path: string, body: Record<string, unknown>): Promise<void> {
    const response = await call(sandbox.url, `/__sandbox/${path}`, { method: 'POST', body });
    expect(response.status).toBeLessThan(300);
  }

  const tokens = () => [...sandbox.state.accessTokens.tokens.values()];
  const token = (id: number) => sandbox.state.accessTokens.tokens.get(id) as AccessTokenRecord;
  /** The active tokens named `name` of the bot that held `oldId`, or of a new bot for an overlap. */
  const activeNamed = (name: string, place: { source: 'project' | 'group'; id: number }) =>
    sandbox.state.accessTokens
      .ofPlace(place.source, place.id)
      .filter((t) => t.name === name && sandbox.state.accessTokens.active(t, sandbox.state.clock.date()));
  const variable = (source: 'project' | 'group', id: number, key: string) =>
    sandbox.state.ciVariables.of(source, id).find((v) => v.key === key);
  const rotateCalls = () =>
    sandbox.state.requestLog.filter((entry) => entry.method === 'POST' && /access_tokens/.test(entry.path));

  /** No value, old or new, in the daemon's logs, the audit, Redis or the pass's records. */
  async function expectNoValueKept(results: readonly PassResult[]): Promise<void> {
    const values = [...OLD_VALUES, ...tokens().map((t) => t.value)];
    const kept = [logs.text, await redisText(harness.redis, harness.prefix), JSON.stringify(results)].join('\n');
    expect(values.filter((value) => kept.includes(value))).toEqual([]);
  }

  it('rotates a due project access token and delivers it to a masked, protected variable, a 0600 file and on_rotate, all read back', async () => {
    const engine = await app({
      deliver: [
        '          - variable: { key: DEPLOY_TOKEN }',
        `          - file: "${join(secrets, 'out', '{holder}-{name}.token')}"`,
        '          - on_rotate: true',
      ],
    });
    const plan = await pass(engine, 'plan');
    expect(plan.decisions.map((d) => `${d.action} ${d.target}: ${d.reason}`)).toEqual([
      `issue_token project access token ${API_TOKEN} "deploy" of project acme/api: rotate: expires 2025-06-07, within before_expiry 14d: rotate it (the forge revokes token ${API_TOKEN} at once), new expiry 2025-08-31`,
      `deliver_token project access token ${API_TOKEN} "deploy" of project acme/api: deliver the new token`,
      `skip project access token ${WEB_TOKEN} "deploy" of project acme/web: skip: expires 2025-08-01, rotates 14d before`,
    ]);
    expect(sandbox.state.requestLog.filter((entry) => entry.method !== 'GET')).toEqual([]);

    const first = await pass(engine);
    expect(acted(first)).toEqual(['issue_token:done', 'deliver_token:done']);
    const [fresh] = activeNamed('deploy', { source: 'project', id: 1 });
    expect(fresh.id).not.toBe(API_TOKEN);
    expect(token(API_TOKEN).revoked).toBe(true);
    expect(fresh).toMatchObject({
      expires_at: '2025-08-31',
      scopes: ['api', 'read_registry'],
      user_id: token(API_TOKEN).user_id,
    });
    expect(variable('project', 1, 'DEPLOY_TOKEN')).toMatchObject({
      value: fresh.value,
      masked: true,
      protected: true,
      environment_scope: '*',
    });
    const file = join(secrets, 'out', 'acme_api-deploy.token');
    expect(readFileSync(file, 'utf8')).toBe(fresh.value);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(secrets, `hook-${fresh.id}`), 'utf8')).toBe(fresh.value);
    // The value file the daemon keeps it in is 0600 too.
    expect(statSync(join(secrets, 'rotate', 'tokens', `project_token-acme_api-${API_TOKEN}.json`)).mode & 0o777).toBe(
      0o600,
    );
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);

    // The next pass leaves both alone: the new token is the rotation's, and not due.
    const next = await pass(engine);
    expect(acted(next)).toEqual([]);
    expect(rotateCalls()).toHaveLength(1);
    await expectNoValueKept([plan, first, next]);
  });

  it('rotates a group access token into a masked and hidden variable of its group, verified by its flags', async () => {
    const engine = await app({ projects: '[acme/web]', groups: true });
    const first = await pass(engine);
    expect(acted(first)).toEqual(['issue_token:done', 'deliver_token:done']);
    const [fresh] = activeNamed('group-ci', { source: 'group', id: 10 });
    expect(fresh).toMatchObject({ scopes: ['read_api'], expires_at: '2025-07-02' });
    expect(token(GROUP_TOKEN).revoked).toBe(true);
    expect(variable('group', 10, 'GROUP_TOKEN')).toMatchObject({
      value: fresh.value,
      hidden: true,
      masked: true,
      environment_scope: 'production',
    });
    await expectNoValueKept([first]);
  });

  it('an answer dropped after the forge rotated: the token it made is found and rotated again with the bot’s credential, delivered, no family revoked', async () => {
    const engine = await app({ projects: '[acme/api]' });
    await control('faults', {
      method: 'POST',
      path: `/projects/acme%2Fapi/access_tokens/${API_TOKEN}/rotate$`,
      status: 502,
      after: true,
      times: 1,
    });
    const first = await pass(engine);
    expect(acted(first)).toEqual(['issue_token:failed', 'deliver_token:stale']);
    // The forge acted: the old token is revoked and its successor, whose value nobody has, is active.
    const [lost] = activeNamed('deploy', { source: 'project', id: 1 });
    expect(token(API_TOKEN).revoked).toBe(true);

    await advanceHours(1);
    const second = await pass(engine);
    expect(acted(second)).toEqual(['issue_token:done', 'deliver_token:done']);
    const [fresh] = activeNamed('deploy', { source: 'project', id: 1 });
    expect(fresh.id).not.toBe(lost.id);
    expect(token(lost.id).revoked).toBe(true);
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(fresh.value);
    // What was delivered works.
    expect((await call(sandbox.url, '/api/v4/user', { token: fresh.value })).status).toBe(200);
    // Rotated twice, each time an active token (the old one, then the lost answer's), never a revoked one.
    expect(rotateCalls().map((entry) => entry.path)).toEqual([
      `/api/v4/projects/acme%2Fapi/access_tokens/${API_TOKEN}/rotate`,
      `/api/v4/projects/acme%2Fapi/access_tokens/${lost.id}/rotate`,
    ]);
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);
    await expectNoValueKept([first, second]);
  });

  it('a recovery refused before the forge acted: the lost answer’s token is found again and rotated, no second token made beside it', async () => {
    const engine = await app({ projects: '[acme/api]' });
    await control('faults', {
      method: 'POST',
      path: `/projects/acme%2Fapi/access_tokens/${API_TOKEN}/rotate$`,
      status: 502,
      after: true,
      times: 1,
    });
    await pass(engine);
    const [lost] = activeNamed('deploy', { source: 'project', id: 1 });
    // The recovery's rotate of the lost answer's token refused before the forge acted (found in the chaos suite).
    await control('faults', {
      method: 'POST',
      path: `/projects/acme%2Fapi/access_tokens/${lost.id}/rotate$`,
      status: 503,
      times: 1,
    });
    await advanceHours(1);
    const second = await pass(engine);
    expect(acted(second)).toEqual(['issue_token:failed', 'deliver_token:stale']);
    expect(token(lost.id).revoked).toBe(false);

    await advanceHours(1);
    const third = await pass(engine);
    expect(acted(third)).toEqual(['issue_token:done', 'deliver_token:done']);
    const active = activeNamed('deploy', { source: 'project', id: 1 });
    expect(active).toHaveLength(1);
    expect(token(lost.id).revoked).toBe(true);
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(active[0].value);
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);
  });

  it('overlap: Redis back empty during the grace: the token in the value file is taken up, no second token made', async () => {
    const engine = await app({ projects: '[acme/api]', strategy: 'overlap' });
    const first = await pass(engine);
    expect(acted(first)).toEqual(['issue_token:done', 'deliver_token:done']);
    const made = rotateCalls().length;
    // The rotation's record and the ledger gone, as after a Redis restart without its data.
    const keys = await harness.redis.keys(`${harness.prefix}:*`);
    if (keys.length > 0) await harness.redis.del(...keys);
    await advanceHours(1);
    await pass(engine);
    expect(rotateCalls()).toHaveLength(made);
    await advanceHours(25);
    await pass(engine);
    const active = activeNamed('deploy', { source: 'project', id: 1 });
    expect(active).toHaveLength(1);
    expect(token(API_TOKEN).revoked).toBe(true);
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(active[0].value);
  });

  it('a daemon that stops between the answer and the delivery: another on the same Redis and secrets dir delivers from the value file, rotating nothing again', async () => {
    const first = await app({ projects: '[acme/api]' });
    // Every variable write fails, as if the daemon died before it delivered.
    await control('faults', { method: 'POST', path: '/projects/acme%2Fapi/variables$', status: 500, times: 10 });
    expect(acted(await pass(first))).toEqual(['issue_token:done', 'deliver_token:failed']);
    await harness.close(first);
    await call(sandbox.url, '/__sandbox/faults', { method: 'DELETE' });

    await advanceHours(1);
    const second = await app({ projects: '[acme/api]' });
    const resumed = await pass(second);
    expect(acted(resumed)).toEqual(['deliver_token:done']);
    const [fresh] = activeNamed('deploy', { source: 'project', id: 1 });
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(fresh.value);
    expect(rotateCalls()).toHaveLength(1);
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);
  });

  it('a daemon that died after keeping the answer but before recording it: the value file is taken up, nothing is rotated again', async () => {
    const first = await app({ projects: '[acme/api]' });
    await control('faults', { method: 'POST', path: '/projects/acme%2Fapi/variables$', status: 500, times: 10 });
    expect(acted(await pass(first))).toEqual(['issue_token:done', 'deliver_token:failed']);
    await harness.close(first);
    await call(sandbox.url, '/__sandbox/faults', { method: 'DELETE' });
    // The record as it was just before the answer came: `sending`, the new token not recorded.
    const [key] = await harness.redis.keys(`${harness.prefix}:*token-rotation:project_token-acme/api-${API_TOKEN}`);
    const record = JSON.parse((await harness.redis.get(key)) ?? '{}') as Record<string, unknown>;
    await harness.redis.set(
      key,
      JSON.stringify({ ...record, step: 'sending', new_token_id: null, value_sha256: null }),
    );
    // And the ledger as a claim whose owner died leaves it: the attempt may have acted.
    for (const claim of await harness.redis.keys(`${harness.prefix}:*project_token-acme/api-${API_TOKEN}:issue*`)) {
      const entry = JSON.parse((await harness.redis.get(claim)) ?? '{}') as Record<string, unknown>;
      if (entry.state === 'done') await harness.redis.set(claim, JSON.stringify({ ...entry, state: 'failed' }));
    }

    await advanceHours(1);
    const second = await app({ projects: '[acme/api]' });
    const resumed = await pass(second);
    expect(acted(resumed)).toEqual(['issue_token:done', 'deliver_token:done']);
    expect(resumed.records.find((r) => r.decision.action === 'issue_token')?.detail).toMatch(
      /taken up from .*; nothing sent again$/,
    );
    const [fresh] = activeNamed('deploy', { source: 'project', id: 1 });
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(fresh.value);
    expect(rotateCalls()).toHaveLength(1);
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);
  });

  it('overlap: a new token first, the old one keeps working through the grace and is revoked after it', async () => {
    const engine = await app({ projects: '[acme/api]', strategy: 'overlap' });
    const first = await pass(engine);
    expect(acted(first)).toEqual(['issue_token:done', 'deliver_token:done']);
    const fresh = activeNamed('deploy', { source: 'project', id: 1 }).find(
      (t) => t.id !== API_TOKEN,
    ) as AccessTokenRecord;
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(fresh.value);

    // Within the grace both work: the old value still authenticates.
    await advanceHours(12);
    expect(acted(await pass(engine))).toEqual([]);
    expect((await call(sandbox.url, '/api/v4/user', { token: OLD_VALUES[0] })).status).toBe(200);

    await advanceHours(13);
    const after = await pass(engine);
    expect(acted(after)).toEqual(['revoke_old_token:done']);
    expect(token(API_TOKEN).revoked).toBe(true);
    expect((await call(sandbox.url, '/api/v4/user', { token: OLD_VALUES[0] })).status).toBe(401);
    expect((await call(sandbox.url, '/api/v4/user', { token: fresh.value })).status).toBe(200);
  });

  it('overlap: a variable a person deleted during the grace is delivered again before the old token goes', async () => {
    const engine = await app({ projects: '[acme/api]', strategy: 'overlap' });
    await pass(engine);
    // A person deletes it, through the API.
    expect(
      (
        await call(sandbox.url, '/api/v4/projects/1/variables/DEPLOY_TOKEN', {
          method: 'DELETE',
          token: MAINTAINER_TOKEN,
        })
      ).status,
    ).toBe(204);
    await advanceHours(25);
    const noticed = await pass(engine);
    expect(acted(noticed)).toEqual(['revoke_old_token:stale']);
    expect(token(API_TOKEN).revoked).toBe(false);
    const again = await pass(engine);
    expect(acted(again)).toEqual(['deliver_token:done']);
    const fresh = activeNamed('deploy', { source: 'project', id: 1 }).find(
      (t) => t.id !== API_TOKEN,
    ) as AccessTokenRecord;
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(fresh.value);
    // Its consumers get a full grace with the value delivered again.
    await advanceHours(25);
    expect(acted(await pass(engine))).toEqual(['revoke_old_token:done']);
    expect(token(API_TOKEN).revoked).toBe(true);
  });

  it('a person revoking the new token during the delivery: the rotation closes and nothing acts on the stale belief', async () => {
    const engine = await app({ projects: '[acme/api]', strategy: 'overlap' });
    const hold = sandbox.state.holds.add({ method: 'POST', path: '/projects/acme%2Fapi/variables$' });
    const running = pass(engine);
    await sandbox.state.holds.reached(hold.id);
    const fresh = activeNamed('deploy', { source: 'project', id: 1 }).find(
      (t) => t.id !== API_TOKEN,
    ) as AccessTokenRecord;
    fresh.revoked = true;
    sandbox.state.holds.release(hold.id);
    expect(acted(await running)).toEqual(['issue_token:done', 'deliver_token:stale']);
    const closed = await pass(engine);
    // The old token was never revoked and keeps working; the rotation closed without acting on the revoked token, and
    // the token still due is rotated afresh (a new generation), as a closed key rotation is.
    expect(acted(closed)).toEqual(['issue_token:done', 'deliver_token:done']);
    expect(token(API_TOKEN).revoked).toBe(false);
    const second = activeNamed('deploy', { source: 'project', id: 1 }).find(
      (t) => t.id !== API_TOKEN,
    ) as AccessTokenRecord;
    expect(second.id).not.toBe(fresh.id);
    expect(variable('project', 1, 'DEPLOY_TOKEN')?.value).toBe(second.value);
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);
  });

  it('two daemons on one Redis rotate each token once', async () => {
    const one = await app({ beforeExpiry: '61d' });
    const two = await app({ beforeExpiry: '61d' });
    const results = await Promise.all([pass(one), pass(two)]);
    const issued = results.flatMap((result) =>
      result.records.filter((r) => r.decision.action === 'issue_token' && r.outcome === 'done'),
    );
    expect(issued).toHaveLength(2);
    expect(rotateCalls()).toHaveLength(2);
    // A delivery one daemon tried while the other was still issuing is taken up at the next pass.
    await advanceHours(1);
    await Promise.all([pass(one), pass(two)]);
    expect(rotateCalls()).toHaveLength(2);
    for (const id of [1, 2]) {
      const [fresh] = activeNamed('deploy', { source: 'project', id });
      expect(variable('project', id, 'DEPLOY_TOKEN')?.value).toBe(fresh.value);
    }
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);
  });
});
