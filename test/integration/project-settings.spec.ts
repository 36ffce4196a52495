import type { INestApplicationContext } from '@nestjs/common';
import { passJson } from '../../src/cli/plan';
import { MovableClock } from '../../src/clock';
import type { PassResult } from '../../src/engine/engine.service';
import { SKIP } from '../../src/engine/policy';
import { POLICY_TYPES } from '../../src/policies';
import { fingerprintStateKey } from '../../src/policies/project-settings/integrations/integrations.params';
import type { World } from '../../src/sandbox';
import { integrationsOf } from '../../src/sandbox/integrations-state';
import { useEngineHarness } from '../support/engine-harness';
import { apiClient, call } from '../support/sandbox-http';
import { ADMIN_TOKEN, apiProject, baseWorld, webProject } from '../support/world-builders';
import { redisText as keptInRedis } from '../support/redis-text';

/**
 * project_settings end to end: the real engine, Redis and executor against the sandbox. Each section's drift is shown
 * by `plan` (one decision per change, its diff line as the reason), repaired by an acting pass (asserted on the
 * sandbox's state) and gone from the next `plan`.
 */

/** acme/api (id 1): `main` protected with developers pushing, an undeclared `legacy` protection; acme/web (id 2), nothing protected. */
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
            },
            { name: 'legacy', push_access_level: 'maintainer', merge_access_level: 'maintainer' },
          ],
        }),
        webProject({ id: 2 }),
      ],
    }),
    // The engine reads the real clock, so the sandbox must too.
    now: undefined,
  };
}

/** The secret of the chat integration, written literally in the policy (the harness reads no environment). */
const SECRET = 'https://chat.example.test/hooks/T0-very-secret-4f9a';
const OTHER_SECRET = 'https://chat.example.test/hooks/T1-other-secret-77c2';

const BRANCHES = [
  '    protected_branches:',
  '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
  '      - { name: "release/*", push_access_level: no_access, merge_access_level: maintainer }',
];

describe('project_settings against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'project-settings', world, policyTypes: POLICY_TYPES });

  function app(sections: readonly string[], extra: readonly string[] = []): Promise<INestApplicationContext> {
    return harness.app({
      policies: [
        '  - name: baseline',
        '    type: project_settings',
        '    projects: [acme/api]',
        '    interval: 30m',
        ...sections,
        ...extra,
      ],
    });
  }

  const plan = (engineApp: INestApplicationContext) => harness.pass(engineApp, 'baseline', 'plan');
  const act = (engineApp: INestApplicationContext) => harness.pass(engineApp, 'baseline', 'act');
  const changes = (pass: PassResult) => pass.decisions.filter((decision) => decision.action !== SKIP);
  const summary = (pass: PassResult) => changes(pass).map((decision) => [decision.action, decision.reason]);
  const outcomes = (pass: PassResult) => pass.records.map((record) => [record.decision.action, record.outcome]);

  /** A protection as the sandbox holds it: its role levels, by list. */
  function protection(name: string) {
    const record = [...harness.sandbox.state.protectedBranches.values()].find(
      (branch) => branch.project_id === 1 && branch.name === name,
    );
    if (!record) return undefined;
    const roles = (entries: readonly { access_level: number | null }[]) => entries.map((entry) => entry.access_level);
    return {
      push: roles(record.push_access_levels),
      merge: roles(record.merge_access_levels),
      unprotect: roles(record.unprotect_access_levels),
      allow_force_push: record.allow_force_push,
    };
  }

  async function fault(rule: Record<string, unknown>): Promise<void> {
    const response = await call(harness.sandbox.url, '/__sandbox/faults', { method: 'POST', body: rule });
    expect(response.status).toBe(201);
  }

  describe('protected branches', () => {
    it('shows the drift, repairs it with the declared levels, and is quiet on the next plan; prune false keeps undeclared protections', async () => {
      const engineApp = await app(BRANCHES);
      const drift = await plan(engineApp);
      // The unprotected declared branch first, then the level change; `legacy` is not declared and prune is off.
      expect(summary(drift)).toEqual([
        ['protect_branch', 'acme/api: protected branch release/*: not protected → protect'],
        ['reprotect_branch', 'acme/api: protected branch main: push_access_level developer → maintainer'],
      ]);
      expect(harness.sandbox.state.requestLog.filter((entry) => entry.method !== 'GET')).toEqual([]);

      const repair = await act(engineApp);
      expect(outcomes(repair)).toEqual([
        ['protect_branch', 'done'],
        ['reprotect_branch', 'done'],
      ]);
      expect(protection('main')).toEqual({ push: [40], merge: [30], unprotect: [40], allow_force_push: false });
      expect(protection('release/*')).toEqual({ push: [0], merge: [40], unprotect: [40], allow_force_push: false });
      expect(protection('legacy')).toEqual({ push: [40], merge: [40], unprotect: [40], allow_force_push: false });

      expect((await plan(engineApp)).decisions).toEqual([]);
    });

    it('with prune, removes the protections not declared', async () => {
      const engineApp = await app(BRANCHES, ['    prune: true']);
      expect(summary(await plan(engineApp))).toContainEqual([
        'unprotect_branch',
        'acme/api: protected branch legacy: protected, not declared → unprotect',
      ]);
      await act(engineApp);
      expect(protection('legacy')).toBeUndefined();
      expect(protection('main')).toMatchObject({ push: [40], merge: [30] });
      expect((await plan(engineApp)).decisions).toEqual([]);
    });

    it('a protect that fails between the two calls of a reprotect leaves the branch protected after the next pass, as it was but for the declared levels', async () => {
      const engineApp = await app([
        '    protected_branches:',
        '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
      ]);
      // Only admins may unprotect main: the policy does not declare that, so it must survive the reprotect.
      const main = [...harness.sandbox.state.protectedBranches.values()].find(
        (branch) => branch.project_id === 1 && branch.name === 'main',
      );
      if (!main) throw new Error('no protection of main in the world');
      main.unprotect_access_levels = [{ access_level: 60, user_id: null, group_id: null }];
      // The unprotect goes through; the protect fails with a 500, which the client repeats only for reads, and so does
      // putting the old protection back at once.
      await fault({ method: 'POST', path: '^/api/v4/projects/1/protected_branches$', status: 500, times: 2 });
      const failed = await act(engineApp);
      expect(outcomes(failed)).toEqual([['reprotect_branch', 'failed']]);
      expect(protection('main')).toBeUndefined();
      const posts = () =>
        harness.sandbox.state.requestLog.filter(
          (entry) => entry.method === 'POST' && entry.path.endsWith('/protected_branches'),
        ).length;
      expect(posts()).toBe(2);

      // The next pass sees main unprotected and protects it first: the declared levels, and the rest as it was.
      const next = await act(engineApp);
      expect(summary(next)).toEqual([
        [
          'protect_branch',
          'acme/api: protected branch main: not protected (a reprotect was interrupted) → protect as before, with the declared levels',
        ],
      ]);
      expect(outcomes(next)).toEqual([['protect_branch', 'done']]);
      expect(protection('main')).toEqual({ push: [40], merge: [30], unprotect: [60], allow_force_push: false });
      expect((await plan(engineApp)).decisions).toEqual([]);
      // Nothing is kept about main any more.
      const kept = await harness.redis.keys(`${harness.prefix}:state:baseline:interrupted-protections:*`);
      expect(await Promise.all(kept.map((key) => harness.redis.get(key)))).toEqual(['{}']);
    });

    it('a protect the forge refuses puts the protection back as it was at once: the branch is never left open', async () => {
      const engineApp = await app([
        '    protected_branches:',
        '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
      ]);
      const before = protection('main');
      await fault({ method: 'POST', path: '^/api/v4/projects/1/protected_branches$', status: 500, times: 1 });
      const failed = await act(engineApp);
      expect(outcomes(failed)).toEqual([['reprotect_branch', 'failed']]);
      // Put back as the forge had it, so nothing is open and nothing is left to repair.
      expect(protection('main')).toEqual(before);
      expect(failed.harm).toBeUndefined();
      const kept = await harness.redis.keys(`${harness.prefix}:state:baseline:interrupted-protections:*`);
      expect(await Promise.all(kept.map((key) => harness.redis.get(key)))).toEqual(['{}']);
    });

    it('a protect whose answer was lost is retried at once, and the 409 of the retry counts as protected', async () => {
      const engineApp = await app([
        '    protected_branches:',
        '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
      ]);
      await fault({
        method: 'POST',
        path: '^/api/v4/projects/1/protected_branches$',
        sequence: [{ status: 502, after: true }],
      });
      const pass = await act(engineApp);
      expect(outcomes(pass)).toEqual([['reprotect_branch', 'done']]);
      expect(protection('main')).toEqual({ push: [40], merge: [30], unprotect: [40], allow_force_push: false });
      const protects = harness.sandbox.state.requestLog.filter(
        (entry) => entry.method === 'POST' && entry.path.endsWith('/protected_branches'),
      );
      expect(protects.map((entry) => entry.status)).toEqual([502, 409]);
      expect((await plan(engineApp)).decisions).toEqual([]);
    });
  });

  it('over a glob: says which projects it covered, and a project deleted since discovery drops out of the pass', async () => {
    const engineApp = await harness.app({
      policies: [
        '  - name: baseline',
        '    type: project_settings',
        '    projects: ["acme/*"]',
        '    interval: 30m',
        ...BRANCHES,
      ],
    });
    const first = await plan(engineApp);
    expect(first.covered).toEqual(['acme/api', 'acme/web']);
    expect(changes(first).map((decision) => decision.target)).toEqual([
      'acme/api protected branch release/*',
      'acme/web protected branch main',
      'acme/web protected branch release/*',
      'acme/api protected branch main',
    ]);
    harness.sandbox.state.projects.delete(2);
    const next = await plan(engineApp);
    expect(next.covered).toEqual(['acme/api']);
    expect(changes(next).every((decision) => decision.target.startsWith('acme/api '))).toBe(true);
  });

  describe('approvals', () => {
    const APPROVALS = [
      '    approvals:',
      '      settings: { reset_approvals_on_push: false, merge_requests_author_approval: true }',
      '      rules:',
      '        - { name: security, approvals_required: 2, group_ids: [10] }',
      '        - { name: qa, approvals_required: 1, user_ids: [2] }',
    ];

    /** The forge as found: default settings, `security` (1 approval, no groups) and an undeclared `legacy` rule. */
    async function seedRules(): Promise<{ security: number; legacy: number }> {
      const api = apiClient(harness.sandbox.url, ADMIN_TOKEN);
      const security = await api('/projects/1/approval_rules', {
        method: 'POST',
        body: { name: 'security', approvals_required: 1 },
      });
      const legacy = await api('/projects/1/approval_rules', {
        method: 'POST',
        body: { name: 'legacy', approvals_required: 1 },
      });
      expect([security.status, legacy.status]).toEqual([201, 201]);
      harness.sandbox.state.requestLog.length = 0;
      return { security: (security.json as { id: number }).id, legacy: (legacy.json as { id: number }).id };
    }

    const rules = () =>
      harness.sandbox.state.approvals.project(1).rules.map((rule) => ({
        id: rule.id,
        name: rule.name,
        approvals_required: rule.approvals_required,
        user_ids: rule.user_ids,
        group_ids: rule.group_ids,
      }));

    it('shows the drift of settings and rules, repairs it keeping the rule ids, and is quiet on the next plan; prune false keeps other rules', async () => {
      const ids = await seedRules();
      const engineApp = await app(APPROVALS);
      const drift = await plan(engineApp);
      expect(summary(drift)).toEqual([
        [
          'edit_approval_settings',
          'acme/api: approval settings: reset_approvals_on_push true → false, merge_requests_author_approval false → true',
        ],
        ['edit_approval_rule', 'acme/api: approval rule security: approvals_required 1 → 2, group_ids [] → [10]'],
        ['create_approval_rule', 'acme/api: approval rule qa: missing → create'],
      ]);
      expect(harness.sandbox.state.requestLog.filter((entry) => entry.method !== 'GET')).toEqual([]);

      const repair = await act(engineApp);
      expect(outcomes(repair)).toEqual([
        ['edit_approval_settings', 'done'],
        ['edit_approval_rule', 'done'],
        ['create_approval_rule', 'done'],
      ]);
      expect(harness.sandbox.state.approvals.project(1).settings).toMatchObject({
        reset_approvals_on_push: false,
        merge_requests_author_approval: true,
      });
      expect(rules()).toEqual([
        { id: ids.security, name: 'security', approvals_required: 2, user_ids: [], group_ids: [10] },
        { id: ids.legacy, name: 'legacy', approvals_required: 1, user_ids: [], group_ids: [] },
        { id: expect.any(Number), name: 'qa', approvals_required: 1, user_ids: [2], group_ids: [] },
      ]);

      expect((await plan(engineApp)).decisions).toEqual([]);
    });

    it('with prune, deletes the user-defined rules not declared', async () => {
      const ids = await seedRules();
      const engineApp = await app(APPROVALS, ['    prune: true']);
      expect(summary(await plan(engineApp))).toContainEqual([
        'delete_approval_rule',
        'acme/api: approval rule legacy (id ' + ids.legacy + '): not declared → delete',
      ]);
      await act(engineApp);
      expect(rules().map((rule) => rule.name)).toEqual(['security', 'qa']);
      expect((await plan(engineApp)).decisions).toEqual([]);
    });
  });

  describe('integrations', () => {
    const chat = (webhook: string) => [
      '    integrations:',
      '      chat-notifications-a:',
      `        webhook: "${webhook}"`,
      '        notify_only_broken_pipelines: true',
    ];
    const service = (slug: string) => integrationsOf(harness.sandbox.state).get(1, slug);
    const puts = () =>
      harness.sandbox.state.requestLog.filter(
        (entry) => entry.method === 'PUT' && entry.path.endsWith('/services/chat-notifications-a'),
      ).length;

    const redisText = (): Promise<string> => keptInRedis(harness.redis, harness.prefix);

    function expectNoSecret(passes: readonly PassResult[], text: string): void {
      for (const secret of [SECRET, OTHER_SECRET]) {
        for (const pass of passes) {
          expect(JSON.stringify(passJson(pass))).not.toContain(secret);
          for (const decision of pass.decisions) expect(`${decision.reason} ${decision.target}`).not.toContain(secret);
        }
        expect(text).not.toContain(secret);
      }
    }

    it('sets a missing integration, is quiet after, sets the secret again once its fingerprint is lost, and never shows it', async () => {
      const engineApp = await app(chat(SECRET));
      const passes: PassResult[] = [];
      const run = async (mode: 'plan' | 'act') => {
        const pass = await harness.pass(engineApp, 'baseline', mode);
        passes.push(pass);
        return pass;
      };

      expect(summary(await run('plan'))).toEqual([
        ['set_integration', 'acme/api: integration chat-notifications-a: not set → set'],
      ]);
      expect(service('chat-notifications-a')).toBeUndefined();

      expect(outcomes(await run('act'))).toEqual([['set_integration', 'done']]);
      expect(service('chat-notifications-a')).toMatchObject({
        active: true,
        properties: { webhook: SECRET, notify_only_broken_pipelines: true },
      });
      expect(puts()).toBe(1);
      // The fingerprint is kept (without expiry), and the secret is not part of it in the clear.
      const stateKey = `${harness.prefix}:state:baseline:${fingerprintStateKey(1)}`;
      expect(Object.keys(JSON.parse((await harness.redis.get(stateKey)) ?? '{}') as object)).toEqual(
        expect.arrayContaining(['chat-notifications-a.webhook', 'chat-notifications-a.notify_only_broken_pipelines']),
      );
      expect(await harness.redis.pttl(stateKey)).toBe(-1);

      // Nothing drifts: the second pass changes nothing.
      expect((await run('plan')).decisions).toEqual([]);
      expect((await run('act')).records).toEqual([]);
      expect(puts()).toBe(1);

      // A non-secret drift is shown with both values; the secret is still not.
      service('chat-notifications-a')!.properties.notify_only_broken_pipelines = false;
      expect(summary(await run('plan'))).toEqual([
        ['set_integration', 'acme/api: integration chat-notifications-a: notify_only_broken_pipelines: false → true'],
      ]);
      await run('act');
      expect(service('chat-notifications-a')).toMatchObject({
        properties: { webhook: SECRET, notify_only_broken_pipelines: true },
      });

      // Redis lost the fingerprints: the secret is applied once more, then quiet again.
      await harness.redis.del(stateKey);
      expect(summary(await run('plan'))).toEqual([
        ['set_integration', 'acme/api: integration chat-notifications-a: webhook: (secret) not recorded → set'],
      ]);
      expect(outcomes(await run('act'))).toEqual([['set_integration', 'done']]);
      expect(puts()).toBe(3);
      expect((await run('plan')).decisions).toEqual([]);

      expectNoSecret(passes, await redisText());
    });

    it('says a changed secret changed, without showing either value', async () => {
      const first = await app(chat(SECRET));
      const passes = [await act(first)];
      await harness.close(first);
      const second = await app(chat(OTHER_SECRET));
      const drift = await plan(second);
      expect(summary(drift)).toEqual([
        ['set_integration', 'acme/api: integration chat-notifications-a: webhook: (secret) changed'],
      ]);
      passes.push(drift, await act(second));
      expect(service('chat-notifications-a')).toMatchObject({ properties: { webhook: OTHER_SECRET } });
      expect((await plan(second)).decisions).toEqual([]);
      expectNoSecret(passes, await redisText());
      // The sandbox keeps webhook URLs unmasked in its request log (only tokens and passwords are redacted), so the
      // daemon's outputs and Redis are what is checked above.
    });

    it('a refusal that echoes the secret is reported without it, parked, and sent again only after its wait', async () => {
      await fault({
        method: 'PUT',
        path: '/services/chat-notifications-a$',
        status: 400,
        times: 1,
        body: { message: { webhook: [`${SECRET} is not allowed`] } },
      });
      const clock = new MovableClock();
      const engineApp = await harness.app({
        policies: [
          '  - name: baseline',
          '    type: project_settings',
          '    projects: [acme/api]',
          '    interval: 30m',
          ...chat(SECRET),
        ],
        clock,
      });
      // A 400 is the forge refusing the request: hiding the secret keeps the error's class, so the executor parks it.
      const refused = await act(engineApp);
      expect(outcomes(refused)).toEqual([['set_integration', 'refused']]);
      expect(refused.records[0]?.detail).toContain('(secret) is not allowed');
      // Nothing was set, so no fingerprint was kept.
      expect(await harness.redis.get(`${harness.prefix}:state:baseline:${fingerprintStateKey(1)}`)).toBeNull();
      // The same decision the next pass is not sent again before its wait (an hour) is over ...
      const parked = await act(engineApp);
      expect(outcomes(parked)).toEqual([['set_integration', 'refused']]);
      expect(puts()).toBe(1);
      // ... and is then, and goes through.
      clock.advance(61 * 60_000);
      const next = await act(engineApp);
      expect(outcomes(next)).toEqual([['set_integration', 'done']]);
      expect(puts()).toBe(2);
      expectNoSecret([refused, parked, next], await redisText());
    });

    it('a read that echoes the secret, while observing or before acting, is reported without it', async () => {
      const echo = { status: 500, body: { message: `upstream said ${SECRET}` } };
      // Every read of the integration while observing (a GET is tried again after a 500) ...
      await fault({ method: 'GET', path: '/services/chat-notifications-a$', ...echo, times: 8 });
      const engineApp = await app(chat(SECRET));
      const unread = await act(engineApp);
      expect(unread.unobserved).toEqual([
        {
          target: 'project acme/api',
          reason: 'GET projects/1/services/chat-notifications-a → 500: upstream said (secret)',
        },
      ]);

      // ... then the reads of the precondition, once observing went through.
      await call(harness.sandbox.url, '/__sandbox/faults', { method: 'DELETE' });
      await fault({ method: 'GET', path: '/services$', sequence: ['pass', ...Array.from({ length: 8 }, () => echo)] });
      const unchecked = await act(engineApp);
      expect(unchecked.records.map((record) => [record.outcome, record.detail])).toEqual([
        [
          'failed',
          'not sent: its precondition could not be read: GET projects/1/services → 500: upstream said (secret)',
        ],
      ]);
      expect(puts()).toBe(0);
      expectNoSecret([unread, unchecked], await redisText());
    });

    it('repairs a declared parameter and keeps the ones a person set that the policy does not declare', async () => {
      const api = apiClient(harness.sandbox.url, ADMIN_TOKEN);
      // A person sets the pipeline mail up with their own choices of add_pusher and branches.
      const body = {
        recipients: 'ops@acme.test',
        add_pusher: true,
        branches_to_be_notified: 'protected',
        notify_only_broken_pipelines: false,
      };
      expect((await api('/projects/1/services/pipelines-email', { method: 'PUT', body })).status).toBe(200);
      const engineApp = await app([
        '    integrations:',
        '      pipelines-email:',
        '        recipients: ops@acme.test',
        '        notify_only_broken_pipelines: true',
      ]);
      const pass = await act(engineApp);
      expect(summary(pass)).toEqual([
        ['set_integration', 'acme/api: integration pipelines-email: notify_only_broken_pipelines: false → true'],
      ]);
      expect(outcomes(pass)).toEqual([['set_integration', 'done']]);
      // Only what is declared was sent, and the forge keeps what it was not sent.
      const put = harness.sandbox.state.requestLog
        .filter((entry) => entry.method === 'PUT' && entry.path.endsWith('/services/pipelines-email'))
        .at(-1);
      expect(Object.keys((put?.body ?? {}) as object).sort()).toEqual(['notify_only_broken_pipelines', 'recipients']);
      expect(service('pipelines-email')?.properties).toMatchObject({
        recipients: 'ops@acme.test',
        add_pusher: true,
        branches_to_be_notified: 'protected',
        notify_only_broken_pipelines: true,
      });
      expect((await plan(engineApp)).decisions).toEqual([]);
    });

    it('prune false leaves an undeclared integration alone; prune true removes it', async () => {
      const api = apiClient(harness.sandbox.url, ADMIN_TOKEN);
      const wiki = await api('/projects/1/services/external-wiki', {
        method: 'PUT',
        body: { external_wiki_url: 'https://wiki.example.test/acme' },
      });
      expect(wiki.status).toBe(200);

      const keep = await app(chat(SECRET));
      await act(keep);
      expect(service('external-wiki')).toBeDefined();
      expect((await plan(keep)).decisions).toEqual([]);
      await harness.close(keep);

      const prune = await app(chat(SECRET), ['    prune: true']);
      expect(summary(await plan(prune))).toEqual([
        ['disable_integration', 'acme/api: integration external-wiki: active, not declared → disable'],
      ]);
      expect(outcomes(await act(prune))).toEqual([['disable_integration', 'done']]);
      expect(service('external-wiki')).toBeUndefined();
      expect(service('chat-notifications-a')).toBeDefined();
      expect((await plan(prune)).decisions).toEqual([]);
    });
  });
});
