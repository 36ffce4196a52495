import type { INestApplicationContext } from '@nestjs/common';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PassResult } from '../../src/engine/engine.service';
import { keyRotationPolicy } from '../../src/policies/key-rotation/key-rotation.schema';
import type { RunningSandbox, World } from '../../src/sandbox';
import { MovableClock } from '../../src/clock';
import { ADMIN_TOKEN, acmeGroup, apiProject, baseWorld, MAINTAINER_TOKEN, webProject } from '../support/world-builders';
import { call } from '../support/sandbox-http';
import { useEngineHarness } from '../support/engine-harness';
import { MemoryStream } from '../support/memory-stream';
import { redisText } from '../support/redis-text';

const HOUR_MS = 3_600_000;
const REGISTRY = 701;
const CLONE = 702;
const MIA_CI = 501;
const ROOT_OWN = 500;
const OLD_VALUES = ['gldt-api-registry-0001', 'gldt-acme-clone-00001', 'glpat-mia-ci-0123456789'];

/**
 * acme/api's deploy token `registry` (username ci-registry) expires in 3 days, group acme's `clone` in 2; mia's
 * personal token `ci` in 5, and the daemon's own token (root's `ci-own`) in 2.
 */
function world(): World {
  const base = baseWorld({
    groups: [
      acmeGroup({
        deploy_tokens: [
          { token: OLD_VALUES[1], id: CLONE, name: 'clone', scopes: ['read_repository'], expires_at: 'now+2d' },
        ],
      }),
    ],
    projects: [
      apiProject({
        deploy_tokens: [
          {
            token: OLD_VALUES[0],
            id: REGISTRY,
            name: 'registry',
            username: 'ci-registry',
            scopes: ['read_registry'],
            expires_at: 'now+3d',
          },
        ],
      }),
      webProject(),
    ],
  });
  return {
    ...base,
    users: base.users?.map((user) => {
      if (user.username === 'root')
        return {
          ...user,
          tokens: [{ token: ADMIN_TOKEN, id: ROOT_OWN, name: 'ci-own', scopes: ['api'], expires_at: 'now+2d' }],
        };
      if (user.username === 'mia')
        return {
          ...user,
          tokens: [
            MAINTAINER_TOKEN,
            { token: OLD_VALUES[2], id: MIA_CI, name: 'ci', scopes: ['read_api'], expires_at: 'now+5d' },
          ],
        };
      return user;
    }),
  };
}

/** Deploy tokens (overlap only) and personal access tokens (rotate only), rotated and delivered against the sandbox. */
describe('key_rotation of deploy tokens and personal access tokens against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'key-rotation-token-kinds', world, policyTypes: [keyRotationPolicy] });
  let sandbox: RunningSandbox;
  let clock: MovableClock;
  let secrets: string;
  let logs: MemoryStream;

  beforeEach(() => {
    sandbox = harness.sandbox;
    clock = new MovableClock(sandbox.state.clock.now());
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-token-kinds-'));
    logs = new MemoryStream();
  });

  afterEach(() => rmSync(secrets, { recursive: true, force: true }));

  function app(sections: string[]): Promise<INestApplicationContext> {
    const policies = [
      '  - name: rotate',
      '    type: key_rotation',
      '    interval: 1h',
      `    secrets_dir: "${secrets}"`,
      ...sections,
    ];
    return harness.app({ policies, clock, logs });
  }

  const deploy = () => [
    '    deploy_tokens:',
    '      - projects: [acme/api]',
    '        groups: [acme]',
    '        names: ["^(registry|clone)$"]',
    '        before_expiry: 7d',
    '        lifetime: 90d',
    '        grace: 1d',
    '        deliver:',
    '          - variable: { key: REGISTRY_TOKEN }',
    `          - file: "${join(secrets, 'out', '{holder}-{name}')}"`,
  ];
  const PERSONAL = [
    '    personal_access_tokens:',
    '      - users: [self, mia]',
    '        names: ["^ci"]',
    '        before_expiry: 7d',
    '        lifetime: 30d',
    '        deliver:',
    '          - variable: { key: MIA_CI_TOKEN, project: acme/api, protected: false }',
  ];

  const pass = (engine: INestApplicationContext, mode: 'act' | 'plan' = 'act'): Promise<PassResult> =>
    harness.pass(engine, 'rotate', mode);
  const acted = (result: PassResult) =>
    result.records.filter((r) => r.outcome !== 'skipped').map((r) => `${r.decision.action}:${r.outcome}`);
  const deployTokens = (source: 'project' | 'group', id: number) =>
    [...sandbox.state.deployTokens.tokens.values()].filter((t) => t.source === source && t.source_id === id);
  const variable = (source: 'project' | 'group', id: number, key: string) =>
    sandbox.state.ciVariables.of(source, id).find((v) => v.key === key);

  async function advanceHours(hours: number): Promise<void> {
    expect(
      (await call(sandbox.url, '/__sandbox/clock', { method: 'POST', body: { advance_seconds: hours * 3600 } })).status,
    ).toBe(200);
    clock.advance(hours * HOUR_MS);
  }

  async function expectNoValueKept(results: readonly PassResult[]): Promise<void> {
    const values = [
      ...OLD_VALUES,
      ...[...sandbox.state.deployTokens.tokens.values()].map((t) => t.value),
      ...[...sandbox.state.accessTokens.tokens.values()].map((t) => t.value),
    ];
    const kept = [logs.text, await redisText(harness.redis, harness.prefix), JSON.stringify(results)].join('\n');
    expect(values.filter((value) => kept.includes(value))).toEqual([]);
  }

  it('deploy tokens of a project and a group: a new token each (name, scopes, chosen username kept), delivered, the old one deleted after the grace', async () => {
    const engine = await app(deploy());
    const first = await pass(engine);
    expect(acted(first)).toEqual(['issue_token:done', 'deliver_token:done', 'issue_token:done', 'deliver_token:done']);
    const registry = deployTokens('project', 1).find((t) => t.id !== REGISTRY);
    expect(registry).toMatchObject({
      name: 'registry',
      username: 'ci-registry',
      scopes: ['read_registry'],
      revoked: false,
    });
    expect(registry?.expires_at?.slice(0, 10)).toBe('2025-08-31');
    expect(variable('project', 1, 'REGISTRY_TOKEN')?.value).toBe(registry?.value);
    const clone = deployTokens('group', 10).find((t) => t.id !== CLONE);
    expect(variable('group', 10, 'REGISTRY_TOKEN')?.value).toBe(clone?.value);
    expect(readFileSync(join(secrets, 'out', 'acme-clone'), 'utf8')).toBe(clone?.value);
    expect(statSync(join(secrets, 'out', 'acme_api-registry')).mode & 0o777).toBe(0o600);
    // Both old tokens still work through the grace.
    expect(deployTokens('project', 1).map((t) => t.id)).toContain(REGISTRY);

    await advanceHours(25);
    const after = await pass(engine);
    expect(acted(after)).toEqual(['revoke_old_token:done', 'revoke_old_token:done']);
    expect(deployTokens('project', 1).map((t) => t.id)).toEqual([registry?.id]);
    expect(deployTokens('group', 10).map((t) => t.id)).toEqual([clone?.id]);
    await expectNoValueKept([first, after]);
  });

  it('a deploy token whose create answer was lost: the token it made is deleted and another made and delivered', async () => {
    const engine = await app(deploy());
    expect(
      (
        await call(sandbox.url, '/__sandbox/faults', {
          method: 'POST',
          body: { method: 'POST', path: '/projects/acme%2Fapi/deploy_tokens$', status: 502, after: true, times: 1 },
        })
      ).status,
    ).toBe(201);
    expect(acted(await pass(engine))).toEqual([
      'issue_token:failed',
      'deliver_token:stale',
      'issue_token:done',
      'deliver_token:done',
    ]);
    const lost = deployTokens('project', 1).find((t) => t.id !== REGISTRY);
    expect(lost).toBeDefined();

    await advanceHours(1);
    expect(acted(await pass(engine))).toEqual(['issue_token:done', 'deliver_token:done']);
    const tokens = deployTokens('project', 1);
    // The old token (still in its grace) and one new token, whose value the variable holds; the lost one is gone.
    expect(tokens.map((t) => t.id)).not.toContain(lost?.id);
    expect(tokens).toHaveLength(2);
    expect(variable('project', 1, 'REGISTRY_TOKEN')?.value).toBe(tokens.find((t) => t.id !== REGISTRY)?.value);
  });

  it('personal access tokens: another user’s rotated with the administrator’s token into a variable; the daemon’s own token is left alone', async () => {
    const engine = await app(PERSONAL);
    const plan = await pass(engine, 'plan');
    expect(plan.decisions.map((d) => `${d.action} ${d.target}: ${d.reason}`)).toEqual([
      `skip personal access token ${ROOT_OWN} "ci-own" of user root: skip: the daemon's own token (expires 2025-06-04): it is rotated through gitlab.token_file, never by a policy`,
      `issue_token personal access token ${MIA_CI} "ci" of user mia: rotate: expires 2025-06-07, within before_expiry 7d: rotate it (the forge revokes token ${MIA_CI} at once), new expiry 2025-07-02`,
      `deliver_token personal access token ${MIA_CI} "ci" of user mia: deliver the new token`,
    ]);
    const first = await pass(engine);
    expect(acted(first)).toEqual(['issue_token:done', 'deliver_token:done']);
    const fresh = sandbox.state.accessTokens.ofUser(2).find((t) => t.name === 'ci' && !t.revoked);
    expect(fresh).toMatchObject({ scopes: ['read_api'], expires_at: '2025-07-02' });
    expect(sandbox.state.accessTokens.tokens.get(MIA_CI)?.revoked).toBe(true);
    expect(sandbox.state.accessTokens.tokens.get(ROOT_OWN)?.revoked).toBe(false);
    expect(variable('project', 1, 'MIA_CI_TOKEN')).toMatchObject({
      value: fresh?.value,
      masked: true,
      protected: false,
    });
    expect(sandbox.state.accessTokens.familyRevocations).toEqual([]);
    await expectNoValueKept([plan, first]);
  });

  it('refuses a delivery to on_rotate in a policy without on_rotate, naming its line', async () => {
    await expect(
      app([
        '    personal_access_tokens:',
        '      - { users: [mia], names: [ci], before_expiry: 7d, lifetime: 30d, deliver: [{ on_rotate: true }] }',
      ]),
    ).rejects.toThrow(
      /key-rotation-token-kinds\.yml:\d+:\d+ policies\[0\]\.personal_access_tokens\[0\]\.deliver\[0\]\.on_rotate: .*this delivery runs on_rotate, which the policy does not set/,
    );
  });
});
