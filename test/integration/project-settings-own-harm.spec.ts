import type { INestApplicationContext } from '@nestjs/common';
import { systemClock } from '../../src/clock';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { EngineGauges } from '../../src/engine/gauges';
import { MetricsService } from '../../src/metrics/metrics.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { asPerson, control, whileHeld } from '../support/person';
import { apiProject, baseWorld, webProject } from '../support/world-builders';

/**
 * The bot's own harm in project_settings: a reprotect cut between its unprotect and its protect leaves a declared
 * branch unprotected. Here the token loses its rights at that very moment (a person takes the bot's administrator flag
 * away while its protect is held at the forge's door). The branch is repaired first at every pass, never parked,
 * shown at once, and protected by the first pass after the rights come back.
 */

const ROOT = 1;
const ADA_TOKEN = 'glpat-sandbox-second-admin';

/** acme/api (1): main protected with developers pushing; root is a developer there besides an administrator. */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: [
      ...(base.users ?? []),
      { id: 9, username: 'ada', name: 'Ada Admin', email: 'ada@acme.test', admin: true, tokens: [ADA_TOKEN] },
    ],
    projects: [
      apiProject({
        id: 1,
        members: [{ user: 'root', access_level: 'developer' }],
        protected_branches: [{ name: 'main', push_access_level: 'developer', merge_access_level: 'developer' }],
      }),
      webProject({ id: 2 }),
    ],
    now: undefined,
  };
}

describe('project_settings repairs the harm it made first', () => {
  const harness = useEngineHarness({ name: 'project-settings-own-harm', world, policyTypes: POLICY_TYPES });
  // Waits within a pass (a repair tried again after 2 s and 5 s) pass at once; the forge's time is the real one.
  const clock = { ...systemClock, sleep: async () => undefined };
  const policy = [
    '  - name: baseline',
    '    type: project_settings',
    '    projects: [acme/api]',
    '    interval: 1h',
    '    protected_branches:',
    '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
  ];
  const run = (engineApp: INestApplicationContext): Promise<PassResult> =>
    engineApp.get(EngineService).runPass('baseline', 'act', 'inline');
  const setAdmin = async (admin: boolean) =>
    expect((await asPerson(harness.sandbox, 'PUT', `/users/${ROOT}`, { admin }, ADA_TOKEN)).status).toBe(200);
  const main = () =>
    [...harness.sandbox.state.protectedBranches.values()].find(
      (branch) => branch.project_id === 1 && branch.name === 'main',
    );
  const levelsOf = () => {
    const found = main();
    return (
      found && {
        push: found.push_access_levels.map((entry) => entry.access_level),
        merge: found.merge_access_levels.map((entry) => entry.access_level),
      }
    );
  };
  const protects = () =>
    harness.sandbox.state.requestLog.filter(
      (entry) => entry.method === 'POST' && entry.path === '/api/v4/projects/1/protected_branches',
    );
  const outcomes = (pass: PassResult) => pass.records.map((record) => `${record.decision.action} ${record.outcome}`);
  async function harmGauge(engineApp: INestApplicationContext): Promise<number | undefined> {
    await engineApp.get(EngineGauges).refreshHarm();
    const values =
      (await engineApp.get(MetricsService).registry.getSingleMetric('forgewarden_harm_open')?.get())?.values ?? [];
    return values.find((value) => value.labels.policy === 'baseline' && value.labels.kind === 'branch_unprotected')
      ?.value;
  }

  it('a protect refused with 403 after the unprotect: shown at once, tried at every pass without parking, protected by the first pass after the rights return', async () => {
    const served = await harness.serve({ policies: policy, clock, webhookToken: 'hook-secret-0000' });
    const engineApp = served.app;

    // The bot's protect is held after its unprotect went through; meanwhile its administrator flag is taken away.
    const cut = await whileHeld(
      harness.sandbox,
      { method: 'POST', path: '^/api/v4/projects/1/protected_branches$' },
      () => run(engineApp),
      () => setAdmin(false),
    );
    expect(outcomes(cut)).toEqual(['reprotect_branch refused']);
    expect(cut.records[0]?.detail).toMatch(/^POST projects\/1\/protected_branches → 403/);
    expect(main()).toBeUndefined();
    // It tried at once to put the protection back as it was: refused too.
    expect(protects().map((entry) => entry.status)).toEqual([403, 403]);
    // Shown at once: the pass's harm, the gauge, the console, and a follow-up within 45 seconds instead of the hour.
    expect(cut.harm).toEqual([
      expect.objectContaining({ kind: 'branch_unprotected', target: 'acme/api protected branch main' }),
    ]);
    expect(await harmGauge(engineApp)).toBe(1);
    expect(cut.nextPassAt!.getTime() - Date.now()).toBeLessThanOrEqual(45_000);
    const page = await (await fetch(`${served.url}/`)).text();
    expect(page).toContain('own harm open: acme/api protected branch main');

    // Two passes while the rights stay away: the repair is sent each time (three tries a pass), never parked.
    for (const pass of [await run(engineApp), await run(engineApp)]) {
      expect(outcomes(pass)).toEqual(['protect_branch failed']);
      expect(pass.records[0]?.decision.repairs).toBe('branch_unprotected');
      expect(pass.records[0]?.detail).toMatch(
        /→ 403: .*; a repair of the bot's own harm is tried again, never parked$/,
      );
      expect(pass.harm?.[0]?.since).toBe(cut.harm?.[0]?.since);
    }
    expect(protects()).toHaveLength(2 + 3 + 3);
    expect(await harmGauge(engineApp)).toBe(1);

    // The rights come back: the first pass protects main as declared, and nothing is open any more.
    await setAdmin(true);
    const mended = await run(engineApp);
    expect(outcomes(mended)).toEqual(['protect_branch done']);
    expect(levelsOf()).toEqual({ push: [40], merge: [30] });
    expect(mended.harm).toBeUndefined();
    expect(await harmGauge(engineApp)).toBe(0);
    expect(await (await fetch(`${served.url}/`)).text()).not.toContain('own harm open');
  });

  it('does not unprotect when the token may not protect that branch now: read before the first call, nothing opened', async () => {
    await setAdmin(false);
    const engineApp = await harness.app({ policies: policy, clock });
    const pass = await run(engineApp);
    expect(outcomes(pass)).toEqual(['reprotect_branch stale']);
    expect(pass.records[0]?.detail).toMatch(
      /^the token may not protect branches of project 1 now \(access level 30, not an administrator; Maintainer is 40\): nothing unprotected$/,
    );
    expect(harness.sandbox.state.requestLog.filter((entry) => entry.method === 'DELETE')).toEqual([]);
    expect(levelsOf()).toEqual({ push: [30], merge: [30] });
    expect(pass.harm).toBeUndefined();
  });

  it('keeps a cut reprotect of a project the token no longer sees as open harm, named, until it sees it again', async () => {
    const engineApp = await harness.app({ policies: policy, clock });
    await whileHeld(
      harness.sandbox,
      { method: 'POST', path: '^/api/v4/projects/1/protected_branches$' },
      () => run(engineApp),
      async () => {
        await setAdmin(false);
        expect(await control(harness.sandbox, 'POST', '/access', { user: 'root', project: 'acme/api', level: 0 })).toBe(
          200,
        );
      },
    );
    expect(main()).toBeUndefined();
    const blind = await run(engineApp);
    // The project is out of sight: not read, not forgotten, its harm named.
    expect(blind.unobserved?.map((entry) => entry.target)).toEqual(['project acme/api']);
    expect(blind.decisions).toEqual([
      expect.objectContaining({
        action: 'skip',
        repairs: 'branch_unprotected',
        reason: expect.stringMatching(
          /^skip: 1: protected branch main: left unprotected by an interrupted reprotect; not visible to the token now \(GET projects\/1 → 404/,
        ),
      }),
    ]);
    expect(blind.harm).toHaveLength(1);

    // Seen again, with its rights: protected first.
    expect(await control(harness.sandbox, 'DELETE', '/access')).toBe(204);
    await setAdmin(true);
    expect(outcomes(await run(engineApp))).toEqual(['protect_branch done']);
    expect(levelsOf()).toEqual({ push: [40], merge: [30] });
  });

  it('forgets the record of a project an administrator no longer finds, and says it is gone rather than unprotected', async () => {
    const engineApp = await harness.app({ policies: policy, clock });
    const cut = await whileHeld(
      harness.sandbox,
      { method: 'POST', path: '^/api/v4/projects/1/protected_branches$' },
      () => run(engineApp),
      async () => {
        expect(await control(harness.sandbox, 'DELETE', '/projects/1')).toBeLessThan(300);
      },
    );
    expect(outcomes(cut)).toEqual(['reprotect_branch gone']);
    expect(cut.harm).toBeUndefined();
    const state = (key: string) => harness.redis.get(`${harness.prefix}:state:baseline:${key}`);
    expect(JSON.parse((await state('interrupted-protections:1')) ?? '{}')).toEqual({});
    expect(JSON.parse((await state('interrupted-protections')) ?? '{}')).toEqual({ projects: [] });
    expect((await run(engineApp)).harm).toBeUndefined();
  });
});
