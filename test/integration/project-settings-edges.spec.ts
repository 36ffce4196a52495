import type { INestApplicationContext } from '@nestjs/common';
import type { PassResult } from '../../src/engine/engine.service';
import { SKIP } from '../../src/engine/policy';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { integrationsOf } from '../../src/sandbox/integrations-state';
import type { ProtectedBranchRecord } from '../../src/sandbox/protected-branches-state';
import { useEngineHarness } from '../support/engine-harness';
import { apiClient, call } from '../support/sandbox-http';
import { ADMIN_TOKEN, apiProject, baseWorld, webProject } from '../support/world-builders';

/**
 * project_settings end to end, the cases project-settings.spec.ts leaves out: a protection whose only drift is code
 * owner approval (changed in place, never unprotected), settings a lower-tier forge does not offer (reported as skips,
 * the pass does not fail and changes nothing), and issue-tracker-b, the one integration that is inactive unless set
 * with `active: true`.
 */

/**
 * acme/api (id 1): `main` (developers push and merge, no code owner approval), `stable` (maintainers, code owner
 * approval on); acme/web (id 2), nothing protected.
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
            },
            {
              name: 'stable',
              push_access_level: 'maintainer',
              merge_access_level: 'maintainer',
              code_owner_approval_required: true,
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

/** The password of issue-tracker-b, written literally in the policy (the harness reads no environment). */
const TRACKER_PASSWORD = 'tracker-password-9c1e-very-secret';

describe('project_settings edge cases against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'project-settings-edges', world, policyTypes: POLICY_TYPES });

  function app(sections: readonly string[]): Promise<INestApplicationContext> {
    return harness.app({
      policies: [
        '  - name: baseline',
        '    type: project_settings',
        '    projects: [acme/api]',
        '    interval: 30m',
        ...sections,
      ],
    });
  }

  const plan = (engineApp: INestApplicationContext) => harness.pass(engineApp, 'baseline', 'plan');
  const act = (engineApp: INestApplicationContext) => harness.pass(engineApp, 'baseline', 'act');
  const changes = (pass: PassResult) => pass.decisions.filter((decision) => decision.action !== SKIP);
  const summary = (pass: PassResult) => changes(pass).map((decision) => [decision.action, decision.reason]);
  const outcomes = (pass: PassResult) => pass.records.map((record) => [record.decision.action, record.outcome]);
  /** Every request the sandbox recorded that was not a read: what the daemon changed, or tried to. */
  const writes = () =>
    harness.sandbox.state.requestLog
      .filter((entry) => entry.method !== 'GET')
      .map((entry) => ({ method: entry.method, path: entry.path, body: entry.body, status: entry.status }));

  function branchRecord(name: string): ProtectedBranchRecord | undefined {
    return [...harness.sandbox.state.protectedBranches.values()].find(
      (branch) => branch.project_id === 1 && branch.name === name,
    );
  }

  /** A protection as the sandbox holds it: its record id (a protect makes a new one), role levels and options. */
  function protection(name: string) {
    const record = branchRecord(name);
    if (!record) return undefined;
    const roles = (entries: readonly { access_level: number | null }[]) => entries.map((entry) => entry.access_level);
    return {
      id: record.id,
      push: roles(record.push_access_levels),
      merge: roles(record.merge_access_levels),
      unprotect: roles(record.unprotect_access_levels),
      allow_force_push: record.allow_force_push,
      code_owner_approval_required: record.code_owner_approval_required,
    };
  }

  async function fault(rule: Record<string, unknown>): Promise<void> {
    const response = await call(harness.sandbox.url, '/__sandbox/faults', { method: 'POST', body: rule });
    expect(response.status).toBe(201);
  }

  it('changes code_owner_approval_required in place with PATCH when the levels already match, without unprotecting, and is quiet after', async () => {
    const before = { main: protection('main'), stable: protection('stable') };
    expect(before.main).toMatchObject({
      push: [30],
      merge: [30],
      unprotect: [40],
      code_owner_approval_required: false,
    });
    expect(before.stable).toMatchObject({
      push: [40],
      merge: [40],
      unprotect: [40],
      code_owner_approval_required: true,
    });

    const engineApp = await app([
      '    protected_branches:',
      '      - { name: main, push_access_level: developer, merge_access_level: developer, code_owner_approval_required: true }',
      '      - { name: stable, push_access_level: maintainer, merge_access_level: maintainer, code_owner_approval_required: false }',
    ]);
    const drift = await plan(engineApp);
    expect(summary(drift)).toEqual([
      ['edit_protected_branch', 'acme/api: protected branch main: code_owner_approval_required false → true'],
      ['edit_protected_branch', 'acme/api: protected branch stable: code_owner_approval_required true → false'],
    ]);
    expect(drift.decisions.filter((decision) => decision.action === SKIP)).toEqual([]);
    expect(writes()).toEqual([]);

    const repair = await act(engineApp);
    expect(outcomes(repair)).toEqual([
      ['edit_protected_branch', 'done'],
      ['edit_protected_branch', 'done'],
    ]);
    // One PATCH per branch, nothing else: no DELETE (unprotect) and no POST (protect).
    expect(writes()).toEqual([
      {
        method: 'PATCH',
        path: '/api/v4/projects/1/protected_branches/main',
        body: { code_owner_approval_required: true },
        status: 200,
      },
      {
        method: 'PATCH',
        path: '/api/v4/projects/1/protected_branches/stable',
        body: { code_owner_approval_required: false },
        status: 200,
      },
    ]);
    // The same records (same ids), the levels untouched, only the option flipped.
    expect(protection('main')).toEqual({ ...before.main, code_owner_approval_required: true });
    expect(protection('stable')).toEqual({ ...before.stable, code_owner_approval_required: false });

    expect((await plan(engineApp)).decisions).toEqual([]);
    expect(writes()).toHaveLength(2);
  });

  it('reports what a lower-tier forge does not offer as skips, does not fail the pass and changes nothing', async () => {
    // A lower tier: protections are answered without code_owner_approval_required ...
    const main = branchRecord('main');
    if (!main) throw new Error('no protection of main in the world');
    delete (main as Partial<ProtectedBranchRecord>).code_owner_approval_required;
    // ... and the approvals and integrations APIs answer 404 or 403, every time.
    await fault({
      method: 'GET',
      path: '^/api/v4/projects/[^/]+/approvals$',
      status: 404,
      body: { message: '404 Not found' },
    });
    await fault({
      method: 'GET',
      path: '^/api/v4/projects/[^/]+/approval_rules$',
      status: 403,
      body: { message: '403 Forbidden' },
    });
    await fault({
      method: 'GET',
      path: '^/api/v4/projects/[^/]+/services$',
      status: 404,
      body: { message: '404 Not found' },
    });
    const answered = await apiClient(harness.sandbox.url, ADMIN_TOKEN)('/projects/1/protected_branches/main');
    expect(answered.status).toBe(200);
    expect(answered.json).not.toHaveProperty('code_owner_approval_required');
    harness.sandbox.state.requestLog.length = 0;

    const engineApp = await app([
      '    protected_branches:',
      '      - { name: main, push_access_level: developer, merge_access_level: developer, code_owner_approval_required: true }',
      '    approvals:',
      '      settings: { reset_approvals_on_push: false }',
      '      rules:',
      '        - { name: security, approvals_required: 2 }',
      '    integrations:',
      '      external-wiki:',
      '        external_wiki_url: "https://wiki.example.test/acme"',
    ]);
    const expectedSkips = [
      ['skip', 'skip: acme/api: protected branch main: code_owner_approval_required not available on this forge'],
      [
        'skip',
        'skip: acme/api: approval settings: not available on this forge, or not to this token (the forge answered 404 or 403)',
      ],
      [
        'skip',
        'skip: acme/api: approval rules: not available on this forge, or not to this token (the forge answered 404 or 403)',
      ],
      [
        'skip',
        'skip: acme/api: integrations: not available on this forge, or not to this token (the forge answered 404 or 403)',
      ],
    ];

    // harness.pass fails the test when the pass reports an error.
    const planned = await plan(engineApp);
    expect(planned.error).toBeUndefined();
    expect(planned.decisions.map((decision) => [decision.action, decision.reason])).toEqual(expectedSkips);

    const acted = await act(engineApp);
    expect(acted.error).toBeUndefined();
    expect(acted.decisions.map((decision) => [decision.action, decision.reason])).toEqual(expectedSkips);
    expect(outcomes(acted)).toEqual(expectedSkips.map(() => ['skip', 'skipped']));

    // The faults did answer (so the skips come from the forge's answers), and nothing was written.
    const faulted = harness.sandbox.state.requestLog
      .filter((entry) => entry.fault !== null)
      .map((entry) => [entry.path, entry.status]);
    expect(faulted).toEqual(
      expect.arrayContaining([
        ['/api/v4/projects/1/approvals', 404],
        ['/api/v4/projects/1/approval_rules', 403],
        ['/api/v4/projects/1/services', 404],
      ]),
    );
    expect(writes()).toEqual([]);
    expect(protection('main')).toMatchObject({
      id: main.id,
      push: [30],
      merge: [30],
      unprotect: [40],
      allow_force_push: false,
    });
    expect(protection('main')?.code_owner_approval_required).toBeUndefined();
    expect(harness.sandbox.state.approvals.project(1).rules).toEqual([]);
    expect(integrationsOf(harness.sandbox.state).of(1)).toEqual([]);
  });

  describe('issue-tracker-b', () => {
    const TRACKER = [
      '    integrations:',
      '      issue-tracker-b:',
      '        url: "https://tracker.example.test/acme"',
      '        username: forgewarden-bot',
      `        password: "${TRACKER_PASSWORD}"`,
    ];
    const service = () => integrationsOf(harness.sandbox.state).get(1, 'issue-tracker-b');
    const puts = () =>
      writes().filter(
        (entry) => entry.method === 'PUT' && entry.path === '/api/v4/projects/1/services/issue-tracker-b',
      );

    it('sets it active with its required parameters, is quiet after, and sets it active again once someone deactivates it', async () => {
      const engineApp = await app(TRACKER);
      expect(summary(await plan(engineApp))).toEqual([
        ['set_integration', 'acme/api: integration issue-tracker-b: not set → set'],
      ]);
      expect(writes()).toEqual([]);
      expect(service()).toBeUndefined();

      expect(outcomes(await act(engineApp))).toEqual([['set_integration', 'done']]);
      // One PUT, with active=true: without it the forge leaves this service inactive.
      expect(writes()).toEqual([
        {
          method: 'PUT',
          path: '/api/v4/projects/1/services/issue-tracker-b',
          body: {
            active: true,
            url: 'https://tracker.example.test/acme',
            username: 'forgewarden-bot',
            password: '[redacted]',
          },
          status: 200,
        },
      ]);
      expect(service()).toMatchObject({
        active: true,
        properties: {
          url: 'https://tracker.example.test/acme',
          username: 'forgewarden-bot',
          password: TRACKER_PASSWORD,
        },
      });
      // As a user of the forge sees it: listed among the active services.
      const listed = await apiClient(harness.sandbox.url, ADMIN_TOKEN)('/projects/1/services');
      expect(listed.status).toBe(200);
      expect(listed.json).toEqual([expect.objectContaining({ slug: 'issue-tracker-b', active: true })]);

      expect((await plan(engineApp)).decisions).toEqual([]);
      expect((await act(engineApp)).records).toEqual([]);
      expect(puts()).toHaveLength(1);

      // Someone turns it off on the forge: the drift is shown, repaired, and gone.
      const record = service();
      if (!record) throw new Error('issue-tracker-b is not set');
      record.active = false;
      expect(summary(await plan(engineApp))).toEqual([
        ['set_integration', 'acme/api: integration issue-tracker-b: inactive → active'],
      ]);
      expect(outcomes(await act(engineApp))).toEqual([['set_integration', 'done']]);
      expect(puts()).toHaveLength(2);
      expect(service()).toMatchObject({
        active: true,
        properties: {
          url: 'https://tracker.example.test/acme',
          username: 'forgewarden-bot',
          password: TRACKER_PASSWORD,
        },
      });
      expect((await plan(engineApp)).decisions).toEqual([]);
    });
  });
});
