import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConsoleReader } from '../../src/console/console-reader';
import { EngineService } from '../../src/engine/engine.service';
import { MetricsService } from '../../src/metrics/metrics.service';
import { POLICY_TYPES } from '../../src/policies';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { nightlyBackupPolicy, useBackupFolder } from '../support/group-backup';
import { call } from '../support/sandbox-http';
import { acmeGroup, aProject, baseWorld } from '../support/world-builders';

/**
 * Backup sets at the forge's own limits: the sandbox keeps its default 6 project exports a minute, and the clock the
 * daemon and the forge share jumps through every wait, so minutes of pacing pass in moments while both count them.
 */

const PROJECTS = 14;
const BEHIND_FIELD = JSON.stringify(['nightly', 'backup_set_behind', { group: 'acme' }]);

function world(): World {
  return baseWorld({
    groups: [acmeGroup(), { id: 11, path: 'platform', parent: 'acme' }],
    projects: Array.from({ length: PROJECTS }, (_, index) => ({
      ...aProject(`p${String(index + 1).padStart(2, '0')}`, { id: index + 1 }),
      namespace: index % 2 === 0 ? 'acme' : 'acme/platform',
    })),
    now: '2026-11-27T01:58:30.000Z',
  });
}

describe('group_backup sets within the forge’s limits', () => {
  const harness = useEngineHarness({ name: 'group-backup-sets', world, policyTypes: POLICY_TYPES });
  const backupFolder = useBackupFolder(() => harness.sandbox.url);
  /** Sleeps taken by the daemon while its set ran, and what the console and Redis said at each. */
  let onSleep: (() => Promise<void>) | undefined;

  beforeEach(async () => {
    // The forge's own limits (a minute's window) and export delay, not the test speed useBackupFolder set.
    const answer = await call(harness.sandbox.url, '/__sandbox/settings', {
      method: 'POST',
      body: { export_rate_limits: { window_ms: 60_000 } },
    });
    expect(answer.status).toBe(200);
    const clock = harness.sandbox.state.clock;
    clock.sleep = async (ms: number) => {
      clock.advance(ms);
      await onSleep?.();
      // Lets the forge's export work (real timers) run between two jumps.
      await new Promise((resolve) => setTimeout(resolve, 5));
    };
  });

  /** The nightly policy as the forge's limits want it: its download tried once a minute (the default), and `fields`. */
  const policy = (fields: string[] = []) =>
    nightlyBackupPolicy(backupFolder(), fields).filter(
      (line) =>
        line !== '    download_interval: 1s' &&
        !(line === '    schedule: "0 2 * * *"' && fields.some((field) => field.startsWith('schedule:'))),
    );

  const manifest = (): Manifest =>
    JSON.parse(readFileSync(join(backupFolder(), 'acme', 'manifest.json'), 'utf8')) as Manifest;

  it('requests no more than 6 project exports in any minute, gets no 429, and plan says how long the set takes', async () => {
    const engineApp = await harness.app({ dryRun: false, clock: harness.sandbox.state.clock, policies: policy() });
    const plan = await harness.pass(engineApp, 'nightly', 'plan');
    expect(plan.decisions[0]?.details?.[0]).toBe(
      `the set: the group archive and ${PROJECTS} projects, about 4 min at 6 project exports a minute`,
    );

    const pass = await harness.pass(engineApp, 'nightly', 'act');
    expect(pass.records.map((record) => record.outcome)).toEqual(['done']);
    expect(manifest().sets[0]).toMatchObject({ state: 'complete', missing: [] });
    expect(manifest().sets[0]?.projects).toHaveLength(PROJECTS);
    expect(harness.sandbox.state.requestLog.filter((request) => request.status === 429)).toEqual([]);
    const exports = harness.sandbox.state.requestLog
      .filter((request) => request.method === 'POST' && /^\/api\/v4\/projects\/\d+\/export$/.test(request.path))
      .map((request) => Date.parse(request.time));
    expect(exports).toHaveLength(PROJECTS);
    for (const [index, time] of exports.entries()) {
      const window = exports.filter((other, otherIndex) => otherIndex >= index && other < time + 60_000);
      expect(window.length).toBeLessThanOrEqual(6);
    }
    // 14 exports at 6 a minute: the last one at least two minutes after the first.
    expect((exports.at(-1) ?? 0) - (exports[0] ?? 0)).toBeGreaterThanOrEqual(120_000);
  });

  it('a set that cannot finish before the next scheduled one says so on the console’s overview and in a metric while it runs', async () => {
    // Hourly, one export a minute, begun at 01:58:30: 14 projects need 15 minutes, the next run is at 02:00.
    const engineApp = await harness.app({
      dryRun: false,
      clock: harness.sandbox.state.clock,
      policies: policy(['schedule: "0 * * * *"', 'project_exports_per_minute: 1']),
    });
    const plan = await harness.pass(engineApp, 'nightly', 'plan');
    // Shorter than the hour between two runs, so no warning: this set is behind because it begins late.
    expect(plan.decisions[0]?.details?.[0]).toBe(
      `the set: the group archive and ${PROJECTS} projects, about 15 min at 1 project exports a minute`,
    );
    const seen: { metric: string | null; notices: readonly string[] }[] = [];
    onSleep = async () => {
      const [row] = (await engineApp.get(ConsoleReader).overview()).policies;
      const page = await engineApp.get(ConsoleReader).policy('nightly');
      // The overview's row and the policy's page say the same.
      expect(page?.row.notices).toEqual(row?.notices);
      seen.push({
        metric: await harness.redis.hget(`${harness.prefix}:measures`, BEHIND_FIELD),
        notices: row?.notices ?? [],
      });
    };
    try {
      await engineApp.get(EngineService).runPass('nightly', 'act', 'queue');
    } finally {
      onSleep = undefined;
    }
    // From the moment the projects' pace was known, while the set ran: the flag up, and the overview saying so.
    const behind = seen.findIndex((look) => look.metric === '1');
    expect(behind).toBeGreaterThanOrEqual(0);
    expect(seen.slice(behind)).toEqual(
      seen
        .slice(behind)
        .map(() => ({ metric: '1', notices: ['the backup set of acme cannot finish before the next scheduled one'] })),
    );
    // Done: the flag is down, and the overview says nothing more.
    expect(await harness.redis.hget(`${harness.prefix}:measures`, BEHIND_FIELD)).toBe('0');
    expect((await engineApp.get(ConsoleReader).overview()).policies[0]?.notices).toEqual([]);
    expect(await engineApp.get(MetricsService).render()).toContain(
      'forgewarden_backup_set_behind{policy="nightly",group="acme"} 0',
    );
    expect(manifest().sets[0]).toMatchObject({ state: 'complete' });
  });
});
