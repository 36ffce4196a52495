import { createServer, type Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import { AuditTrail } from '../../src/engine/stores/audit';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { UnobservedList } from '../../src/engine/observe-targets';
import { SKIP } from '../../src/engine/policy';
import { GitlabClient } from '../../src/gitlab';
import { UnexpectedAnswerError } from '../../src/gitlab/transport/errors';
import { POLICY_TYPES } from '../../src/policies';
import { projectSettingsActions } from '../../src/policies/project-settings/project-settings.actions';
import { decideProjectSettings } from '../../src/policies/project-settings/project-settings.decide';
import { observeProjectSettings } from '../../src/policies/project-settings/project-settings.observer';
import { REPROTECT_BRANCH } from '../../src/policies/project-settings/protected-branches/protected-branches.decide';
import { interruptedStateKey } from '../../src/policies/project-settings/protected-branches/protected-branches.params';
import type { World } from '../../src/sandbox';
import { aPolicy, NOW } from '../support/builders/project-settings';
import { useEngineHarness } from '../support/engine-harness';
import { FakeClock } from '../support/gitlab/fake-clock';
import { asPerson, control, whileHeld } from '../support/person';
import { usePolicySandbox } from '../support/policy-sandbox';
import { call } from '../support/sandbox-http';
import { ADMIN_TOKEN, apiProject, baseWorld, webProject } from '../support/world-builders';

/**
 * project_settings on a forge people use too: a person protects, unprotects or changes a branch between the bot's
 * read and its write, deletes an account an interrupted reprotect kept, closes a project to the bot's token, or the
 * forge answers without a field. The bot acts only while the forge still shows what it decided on, trusts the forge's
 * present state over its own records, reads each project on its own, parks what the forge refuses for good, and never
 * reads an odd answer as drift.
 */

/**
 * acme/api (id 1): `main` with developers pushing and merging, alice (3) and mia (2) allowed to push besides, only
 * maintainers unprotecting. acme/web (id 2): nothing protected.
 */
function world(): World {
  return {
    ...baseWorld({
      projects: [
        apiProject({
          id: 1,
          protected_branches: [
            {
              name: 'main',
              push_access_level: 'developer',
              merge_access_level: 'developer',
              unprotect_access_level: 'maintainer',
              allowed_to_push: [{ user: 'alice' }, { user: 'mia' }],
            },
          ],
        }),
        webProject({ id: 2 }),
      ],
    }),
    // The engine reads the real clock, so the sandbox must too.
    now: undefined,
  };
}

const ALICE = 3;
const MIA = 2;
const MAIN = [
  '    protected_branches:',
  '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
];

describe('project_settings while people work on the forge', () => {
  const harness = useEngineHarness({ name: 'project-settings-forge-changes', world, policyTypes: POLICY_TYPES });

  function app(projects: string, sections: readonly string[] = MAIN): Promise<INestApplicationContext> {
    return harness.app({
      policies: [
        '  - name: baseline',
        '    type: project_settings',
        `    projects: ${projects}`,
        '    interval: 30m',
        ...sections,
      ],
    });
  }

  const run = (engineApp: INestApplicationContext, mode: 'act' | 'plan' = 'act') =>
    engineApp.get(EngineService).runPass('baseline', mode, 'inline');
  const changes = (pass: PassResult) => pass.decisions.filter((decision) => decision.action !== SKIP);
  const summary = (pass: PassResult) => changes(pass).map((decision) => [decision.action, decision.reason]);
  const outcomes = (pass: PassResult) =>
    pass.records.map((record) => [record.decision.target, record.decision.action, record.outcome]);
  /** The bot's and people's writes to a project's protected branches, as the sandbox logged them. */
  const writes = (project: number) =>
    harness.sandbox.state.requestLog
      .filter(
        (entry) => entry.method !== 'GET' && entry.path.startsWith(`/api/v4/projects/${project}/protected_branches`),
      )
      .map((entry) => [entry.method, entry.path.slice(`/api/v4/projects/${project}`.length), entry.status]);

  /** A protection as the sandbox holds it: role levels and the users allowed, by list. */
  function protection(project: number, name: string) {
    const record = [...harness.sandbox.state.protectedBranches.values()].find(
      (branch) => branch.project_id === project && branch.name === name,
    );
    if (!record) return undefined;
    const who = (entries: readonly { access_level: number | null; user_id: number | null }[]) =>
      entries.map((entry) => entry.access_level ?? `user ${entry.user_id}`);
    return {
      push: who(record.push_access_levels),
      merge: who(record.merge_access_levels),
      unprotect: who(record.unprotect_access_levels),
    };
  }

  const interruptedKey = () => `${harness.prefix}:state:baseline:${interruptedStateKey(1)}`;
  const interrupted = async () =>
    JSON.parse((await harness.redis.get(interruptedKey())) ?? '{}') as Record<string, { allowed_to_push?: unknown[] }>;

  async function fault(rule: Record<string, unknown>): Promise<void> {
    const response = await call(harness.sandbox.url, '/__sandbox/faults', { method: 'POST', body: rule });
    expect(response.status).toBe(201);
  }

  /**
   * The reprotect of acme/api's main is interrupted between its two calls: the unprotect goes through, the protect
   * fails (a 500: the client repeats a 500 only for reads). The policy keeps what it removed (alice and mia
   * allowed to push) to put it back.
   */
  /** A reprotect of main cut between its calls: the protect and the putting back of the old protection both fail. */
  async function interruptReprotect(engineApp: INestApplicationContext): Promise<void> {
    await fault({ method: 'POST', path: '^/api/v4/projects/1/protected_branches$', status: 500, times: 2 });
    const failed = await run(engineApp);
    expect(failed.records.find((record) => record.decision.target === 'acme/api protected branch main')).toMatchObject({
      decision: { action: REPROTECT_BRANCH },
      outcome: 'failed',
    });
    expect(protection(1, 'main')).toBeUndefined();
    expect((await interrupted()).main?.allowed_to_push).toEqual([{ user_id: ALICE }, { user_id: MIA }]);
  }

  describe('an interrupted reprotect', () => {
    it('is forgotten once a person protects the branch without alice, and her push right is not given back when the branch is next unprotected', async () => {
      const engineApp = await app('[acme/api]');
      await interruptReprotect(engineApp);

      // A person protects main as declared, without alice and mia.
      expect(
        (
          await asPerson(harness.sandbox, 'POST', '/projects/1/protected_branches', {
            name: 'main',
            push_access_level: 40,
            merge_access_level: 30,
          })
        ).status,
      ).toBe(201);

      // plan shows the record dropped, and drops nothing itself.
      const planned = await run(engineApp, 'plan');
      expect(summary(planned)).toEqual([
        [
          'forget_interrupted_protection',
          "acme/api: protected branch main: protected on the forge now (push maintainer, merge developer) → forget the interrupted reprotect's record; user 3, user 2 not given back",
        ],
      ]);
      expect(Object.keys(await interrupted())).toEqual(['main']);

      // The forge's present state wins: the record is dropped, visibly, and nothing is sent to the forge.
      const before = writes(1).length;
      const forgot = await run(engineApp);
      expect(outcomes(forgot)).toEqual([['acme/api protected branch main', 'forget_interrupted_protection', 'done']]);
      expect(forgot.records[0]?.detail).toBe('forgot the interrupted reprotect of main');
      expect(await interrupted()).toEqual({});
      expect(writes(1)).toHaveLength(before);
      const audit = await engineApp.get(AuditTrail).read(0);
      expect(
        audit.filter((entry) => entry.action === 'forget_interrupted_protection').map((entry) => entry.outcome),
      ).toEqual(['done']);
      expect((await run(engineApp, 'plan')).decisions).toEqual([]);

      // A person unprotects main later: the bot protects it as declared, and alice gets no push right back.
      expect((await asPerson(harness.sandbox, 'DELETE', '/projects/1/protected_branches/main')).status).toBe(204);
      const repaired = await run(engineApp);
      expect(summary(repaired)).toEqual([
        ['protect_branch', 'acme/api: protected branch main: not protected → protect'],
      ]);
      expect(outcomes(repaired)).toEqual([['acme/api protected branch main', 'protect_branch', 'done']]);
      expect(protection(1, 'main')).toEqual({ push: [40], merge: [30], unprotect: [40] });
    });

    it('is restored without a user deleted since, says who was left out, and leaves main protected', async () => {
      const engineApp = await app('[acme/api]');
      await interruptReprotect(engineApp);
      // Alice's account is deleted while main is unprotected.
      expect(await control(harness.sandbox, 'DELETE', `/users/${ALICE}`)).toBe(204);

      const restored = await run(engineApp);
      expect(summary(restored)).toEqual([
        [
          'protect_branch',
          'acme/api: protected branch main: not protected (a reprotect was interrupted) → protect as before, with the declared levels',
        ],
      ]);
      expect(outcomes(restored)).toEqual([['acme/api protected branch main', 'protect_branch', 'done']]);
      expect(restored.records[0]?.detail).toBe(
        'protected main (push maintainer, merge developer, with user 2); left out user 3 (the forge no longer knows this user: deleted)',
      );
      // The declared levels, mia's push right kept, alice's not (she is gone), the unprotect level as it was.
      expect(protection(1, 'main')).toEqual({ push: [40, `user ${MIA}`], merge: [30], unprotect: [40] });
      expect(await interrupted()).toEqual({});
      expect((await run(engineApp, 'plan')).decisions).toEqual([]);
    });

    it('is restored with its roles alone when the forge refuses the users it kept (no longer members), rather than left unprotected', async () => {
      const engineApp = await app('[acme/api]');
      await interruptReprotect(engineApp);
      // Alice leaves the group (and so the project); her account stays.
      expect(await control(harness.sandbox, 'DELETE', `/groups/acme/members/${ALICE}`)).toBe(204);

      const restored = await run(engineApp);
      expect(outcomes(restored)).toEqual([['acme/api protected branch main', 'protect_branch', 'done']]);
      expect(restored.records[0]?.detail).toMatch(
        /^protected main \(push maintainer, merge developer\); left out user 3, user 2 \(the forge refused them: .*not a member of the project\)$/,
      );
      expect(protection(1, 'main')).toEqual({ push: [40], merge: [30], unprotect: [40] });
      // The refused protect, then the one with roles alone; neither repeated.
      expect(writes(1).slice(-2)).toEqual([
        ['POST', '/protected_branches', 400],
        ['POST', '/protected_branches', 201],
      ]);
      expect(await interrupted()).toEqual({});
    });

    it('is restored only while the branch is still unprotected: a person protecting it meanwhile makes the protect stale', async () => {
      const engineApp = await app('[acme/web, acme/api]');
      await interruptReprotect(engineApp);

      // While the bot reads acme/api's protections again before its repair, a person protects main without alice and mia.
      const pass = await whileHeld(
        harness.sandbox,
        { method: 'GET', path: '^/api/v4/projects/1/protected_branches$', after: 1 },
        () => run(engineApp),
        async () => {
          expect(
            (
              await asPerson(harness.sandbox, 'POST', '/projects/1/protected_branches', {
                name: 'main',
                push_access_level: 40,
                merge_access_level: 30,
              })
            ).status,
          ).toBe(201);
        },
      );
      expect(outcomes(pass)).toEqual([['acme/api protected branch main', 'protect_branch', 'stale']]);
      expect(pass.records[0]?.detail).toBe('main is protected with push maintainer, merge developer now, as declared');
      // The bot sent nothing more to acme/api: the person's protect is the last write.
      expect(writes(1).at(-1)).toEqual(['POST', '/protected_branches', 201]);
      expect(protection(1, 'main')).toEqual({ push: [40], merge: [30], unprotect: [40] });

      // The next pass sees it protected and drops the record.
      const next = await run(engineApp);
      expect(outcomes(next)).toEqual([['acme/api protected branch main', 'forget_interrupted_protection', 'done']]);
      expect(await interrupted()).toEqual({});
    });
  });

  it('does not unprotect a branch a person changed since the pass read it: the reprotect is stale, the person’s users kept', async () => {
    const engineApp = await app('[acme/web, acme/api]');
    // While the bot protects acme/web's main, a person sets acme/api's main to the declared roles, with mia allowed to push.
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'POST', path: '^/api/v4/projects/2/protected_branches$' },
      () => run(engineApp),
      async () => {
        expect((await asPerson(harness.sandbox, 'DELETE', '/projects/1/protected_branches/main')).status).toBe(204);
        const body = {
          name: 'main',
          push_access_level: 40,
          merge_access_level: 30,
          allowed_to_push: [{ user_id: MIA }],
        };
        expect((await asPerson(harness.sandbox, 'POST', '/projects/1/protected_branches', body)).status).toBe(201);
      },
    );
    expect(summary(pass)).toContainEqual([
      'reprotect_branch',
      'acme/api: protected branch main: push_access_level developer → maintainer',
    ]);
    expect(outcomes(pass)).toEqual([
      ['acme/web protected branch main', 'protect_branch', 'done'],
      ['acme/api protected branch main', 'reprotect_branch', 'stale'],
    ]);
    expect(pass.records[1]?.detail).toBe(
      'main is protected with push maintainer + user 2, merge developer now, as declared',
    );
    // Only the person's two writes: the bot neither unprotected nor protected acme/api's main.
    expect(writes(1)).toEqual([
      ['DELETE', '/protected_branches/main', 204],
      ['POST', '/protected_branches', 201],
    ]);
    expect(protection(1, 'main')).toEqual({ push: [40, `user ${MIA}`], merge: [30], unprotect: [40] });
    expect(summary(await run(engineApp, 'plan'))).toEqual([]);
  });

  it('re-reads an approval rule before editing it: a person who set it as declared meanwhile makes the edit stale', async () => {
    const security = await asPerson(harness.sandbox, 'POST', '/projects/1/approval_rules', {
      name: 'security',
      approvals_required: 1,
    });
    expect(security.status).toBe(201);
    const ruleId = (security.json as { id: number }).id;
    const engineApp = await app('[acme/api]', [
      '    approvals:',
      '      settings: { reset_approvals_on_push: false }',
      '      rules:',
      '        - { name: security, approvals_required: 2, group_ids: [10] }',
    ]);
    // While the bot edits the settings, a person edits the rule as declared.
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'POST', path: '^/api/v4/projects/1/approvals$' },
      () => run(engineApp),
      async () => {
        expect(
          (
            await asPerson(harness.sandbox, 'PUT', `/projects/1/approval_rules/${ruleId}`, {
              name: 'security',
              approvals_required: 2,
              group_ids: [10],
            })
          ).status,
        ).toBe(200);
      },
    );
    expect(outcomes(pass)).toEqual([
      ['acme/api approval settings', 'edit_approval_settings', 'done'],
      ['acme/api approval rule security', 'edit_approval_rule', 'stale'],
    ]);
    expect(pass.records[1]?.detail).toBe(
      `approval rule security (rule ${ruleId}) requires 2, users [], groups [10] now, as declared`,
    );
    expect(
      harness.sandbox.state.requestLog.filter(
        (entry) => entry.method === 'PUT' && entry.path.includes('/approval_rules/'),
      ),
    ).toHaveLength(1);
  });

  describe('one project’s trouble is that project’s', () => {
    it('names a listed project hidden from the token (404) and goes on with the others; the pass ends partial', async () => {
      expect(await control(harness.sandbox, 'POST', '/access', { user: 'root', project: 'acme/web', level: 0 })).toBe(
        200,
      );
      const engineApp = await app('[acme/web, acme/api]');
      const pass = await run(engineApp);
      expect(pass.error).toBeUndefined();
      expect(pass.unobserved).toEqual([
        { target: 'project acme/web', reason: 'GET projects/acme%2Fweb → 404: 404 Project Not Found' },
      ]);
      expect(outcomes(pass)).toEqual([['acme/api protected branch main', 'reprotect_branch', 'done']]);
      expect(protection(1, 'main')).toMatchObject({ push: [40, `user ${ALICE}`, `user ${MIA}`], merge: [30] });
      const audit = await engineApp.get(AuditTrail).read(0);
      expect(audit.filter((entry) => entry.outcome === 'unobserved').map((entry) => entry.target)).toEqual([
        'project acme/web',
      ]);

      // Once the token may read it again, it is held too.
      expect(await control(harness.sandbox, 'DELETE', '/access')).toBe(204);
      const later = await run(engineApp);
      expect(later.unobserved).toBeUndefined();
      expect(outcomes(later)).toEqual([['acme/web protected branch main', 'protect_branch', 'done']]);
    });

    it('names a project a glob found whose protections the token may not read (403) and goes on with the others', async () => {
      expect(await control(harness.sandbox, 'POST', '/access', { user: 'root', project: 'acme/web', level: 10 })).toBe(
        200,
      );
      const engineApp = await app('["acme/*"]');
      const pass = await run(engineApp);
      expect(pass.error).toBeUndefined();
      expect(pass.unobserved?.map((entry) => entry.target)).toEqual(['project acme/web']);
      expect(pass.unobserved?.[0]?.reason).toMatch(/^GET projects\/2\/protected_branches\?.* → 403: 403 Forbidden$/);
      expect(outcomes(pass)).toEqual([['acme/api protected branch main', 'reprotect_branch', 'done']]);
    });
  });

  it('parks a protect and a reprotect the forge refuses with 403, and sends neither again on the next pass', async () => {
    // The token may read acme/api's protections (developer) but not change them.
    expect(await control(harness.sandbox, 'POST', '/access', { user: 'root', project: 'acme/api', level: 30 })).toBe(
      200,
    );
    const engineApp = await app('[acme/api]', [
      ...MAIN,
      '      - { name: "release/*", push_access_level: no_access, merge_access_level: maintainer }',
    ]);
    const first = await run(engineApp);
    expect(first.error).toBeUndefined();
    expect(outcomes(first)).toEqual([
      ['acme/api protected branch release/*', 'protect_branch', 'refused'],
      ['acme/api protected branch main', 'reprotect_branch', 'refused'],
    ]);
    expect(first.records[0]?.detail).toMatch(
      /^POST projects\/1\/protected_branches → 403: 403 Forbidden; parked until /,
    );
    expect(first.records[1]?.detail).toMatch(
      /^DELETE projects\/1\/protected_branches\/main → 403: 403 Forbidden; parked until /,
    );
    // The protect is not sent a second time at once: a refusal is final.
    expect(writes(1)).toEqual([
      ['POST', '/protected_branches', 403],
      ['DELETE', '/protected_branches/main', 403],
    ]);
    // main was not unprotected.
    expect(protection(1, 'main')).toMatchObject({ push: [30, `user ${ALICE}`, `user ${MIA}`] });

    // The same decisions on the next passes keep their parked keys: nothing is sent again before their time.
    for (let pass = 0; pass < 2; pass++) {
      const again = await run(engineApp);
      expect(outcomes(again)).toEqual([
        ['acme/api protected branch release/*', 'protect_branch', 'refused'],
        ['acme/api protected branch main', 'reprotect_branch', 'refused'],
      ]);
      expect(again.records.map((record) => record.decision.key)).toEqual(
        first.records.map((record) => record.decision.key),
      );
    }
    expect(writes(1)).toHaveLength(2);
    expect((await harness.redis.hkeys(`${harness.prefix}:unsettled:baseline`)).sort()).toEqual(
      first.records.map((record) => record.decision.key).sort(),
    );
    // plan says they are parked.
    const planned = await run(engineApp, 'plan');
    expect(Object.keys(planned.parked ?? {}).sort()).toEqual(planned.decisions.map((decision) => decision.key).sort());
  });
});

/**
 * A forge (or a proxy) answering without a field: not something the sandbox does, so its answers go through a small
 * proxy that drops the field from one project's listing.
 */
describe('project_settings reading an odd answer', () => {
  const forge = usePolicySandbox({
    world: () =>
      baseWorld({
        projects: [
          apiProject({
            id: 1,
            protected_branches: [{ name: 'main', push_access_level: 'maintainer', merge_access_level: 'developer' }],
          }),
          webProject({
            id: 2,
            protected_branches: [{ name: 'main', push_access_level: 'developer', merge_access_level: 'developer' }],
          }),
        ],
      }),
    token: ADMIN_TOKEN,
  });
  let proxy: Server | undefined;
  let client: GitlabClient | undefined;

  afterEach(async () => {
    await client?.close();
    client = undefined;
    await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
    proxy = undefined;
  });

  /** A client of the sandbox through a proxy that drops `field` from every record of the answers whose path matches. */
  async function clientDropping(path: RegExp, field: string): Promise<GitlabClient> {
    const upstream = forge.sandbox.url;
    proxy = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        void (async () => {
          const headers = Object.fromEntries(
            Object.entries(request.headers).filter(([name]) => name !== 'host' && name !== 'content-length'),
          ) as Record<string, string>;
          const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
          const answer = await fetch(`${upstream}${request.url ?? '/'}`, {
            method: request.method,
            headers,
            ...(body && body.length > 0 ? { body } : {}),
          });
          let text = await answer.text();
          if (path.test((request.url ?? '').split('?')[0] ?? '') && text !== '') {
            const json = JSON.parse(text) as unknown;
            const records = Array.isArray(json)
              ? (json as Record<string, unknown>[])
              : [json as Record<string, unknown>];
            for (const record of records) delete record[field];
            text = JSON.stringify(json);
          }
          const passed: Record<string, string> = {};
          answer.headers.forEach((value, name) => {
            if (
              name !== 'content-length' &&
              name !== 'content-encoding' &&
              name !== 'transfer-encoding' &&
              name !== 'connection'
            )
              passed[name] = value;
          });
          response.writeHead(answer.status, passed);
          response.end(text);
        })();
      });
    });
    await new Promise<void>((resolve) => proxy?.listen(0, '127.0.0.1', resolve));
    const address = proxy.address();
    if (typeof address !== 'object' || address === null) throw new Error('no proxy address');
    client = new GitlabClient({
      url: `http://127.0.0.1:${address.port}`,
      token: ADMIN_TOKEN,
      maxRequestsPerMinute: 0,
      minWriteIntervalMs: 0,
      clock: new FakeClock(NOW.getTime()),
      retry: { maxAttempts: 1 },
    });
    return client;
  }

  it.each([
    ['push_access_levels', /^\/api\/v4\/projects\/1\/protected_branches$/, 'push_access_levels is missing'],
    ['merge_access_levels', /^\/api\/v4\/projects\/1\/protected_branches$/, 'merge_access_levels is missing'],
    ['allow_force_push', /^\/api\/v4\/projects\/1\/protected_branches$/, 'allow_force_push is missing'],
  ])(
    'a protection listed without %s is an unexpected answer for that project, never a drift to repair',
    async (field, path, problem) => {
      const unobserved = new UnobservedList();
      const context = forge.context({ client: await clientDropping(path, field), unobserved, mode: 'plan' });
      const config = aPolicy({ projects: ['acme/api', 'acme/web'] });
      const snapshot = await observeProjectSettings(config, context);
      // acme/api is recorded with the request and what was wrong; acme/web is read and decided on.
      expect(unobserved.list()).toEqual([
        {
          target: 'project acme/api',
          reason: `GET projects/1/protected_branches → 200: unexpected answer from GET projects/1/protected_branches: item 0: ${problem}; not compared, nothing changed`,
        },
      ]);
      expect(snapshot.projects.map((project) => project.project)).toEqual(['acme/web']);
      expect(
        decideProjectSettings(config, snapshot, NOW).map((decision) => [decision.action, decision.reason]),
      ).toEqual([['reprotect_branch', 'acme/web: protected branch main: push_access_level developer → maintainer']]);
    },
  );

  it('an approval rule listed without its users is an unexpected answer for that project, never "users [] → declared"', async () => {
    const rule = await forge
      .clientWith(ADMIN_TOKEN)
      .projectApprovalRules.create(1, { name: 'qa', approvals_required: 1, user_ids: [2] });
    const unobserved = new UnobservedList();
    const context = forge.context({
      client: await clientDropping(/^\/api\/v4\/projects\/1\/approval_rules$/, 'users'),
      unobserved,
      mode: 'plan',
    });
    const config = aPolicy({
      projects: ['acme/api'],
      protected_branches: undefined,
      approvals: { rules: [{ name: 'qa', approvals_required: 1, user_ids: [2] }] },
    });
    const snapshot = await observeProjectSettings(config, context);
    expect(unobserved.list()).toEqual([
      { target: 'project acme/api', reason: expect.stringContaining('item 0: users is missing') },
    ]);
    expect(snapshot.projects).toEqual([]);
    expect(rule.id).toEqual(expect.any(Number));
  });

  it('a precondition that reads such an answer sends nothing: the read fails, it is not taken for a change', async () => {
    const config = aPolicy({ projects: ['acme/api'] });
    const params = {
      project: 1,
      source: 'acme/api',
      name: 'main',
      push_access_level: 40,
      merge_access_level: 30,
      unprotect_access_level: 40,
      allow_force_push: false,
    };
    const context = forge.context({
      client: await clientDropping(/^\/api\/v4\/projects\/1\/protected_branches$/, 'push_access_levels'),
      policy: config,
      mode: 'act',
    });
    await expect(projectSettingsActions[REPROTECT_BRANCH].precondition?.(params, context)).rejects.toBeInstanceOf(
      UnexpectedAnswerError,
    );
    expect(forge.sandbox.state.requestLog.filter((entry) => entry.method !== 'GET')).toEqual([]);
  });
});
