import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineService } from '../../src/engine/engine.service';
import { POLICY_TYPES } from '../../src/policies';
import { projectTransferOf } from '../../src/sandbox/project-transfer-state';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import { useEngineHarness } from '../support/engine-harness';
import { nightlyBackupPolicy, useBackupFolder } from '../support/group-backup';
import { acmeGroup, baseWorld } from '../support/world-builders';

/**
 * A month of nightly sets through the real engine: the forge's clock and the daemon's move together a day at a time,
 * each scheduled pass backs up the group and its two projects and prunes, and what is left at the end is restic's
 * answer for the keep rules over the complete sets. One night a project's export always fails: that set is partial,
 * counted by no rule, prunes nothing, and goes once a newer set is complete.
 */

const FIRST_DAY = Date.parse('2026-02-14T00:00:00.000Z');
const DAYS = 31;
const DAY_MS = 86_400_000;
/** 2026-03-15: the newest set of its ISO week, which `weekly` would keep were it complete. */
const PARTIAL_DAY = 29;
const WEB = 2;
const LAST_BACKUP_FIELD = JSON.stringify(['nightly', 'backup_last_success_timestamp_seconds', { group: 'acme' }]);

describe('group_backup retention over a month of scheduled passes', () => {
  const harness = useEngineHarness({
    name: 'group-backup-month',
    world: () => baseWorld({ groups: [acmeGroup()], now: new Date(FIRST_DAY + 3_600_000).toISOString() }),
    policyTypes: POLICY_TYPES,
  });
  const backupFolder = useBackupFolder(() => harness.sandbox.url);

  it('keeps exactly the complete daily, weekly and monthly sets restic would keep, in files and in the manifest; a partial set counts for nothing', async () => {
    const clock = harness.sandbox.state.clock;
    const engineApp = await harness.app({
      dryRun: false,
      clock,
      policies: nightlyBackupPolicy(backupFolder(), ['keep: { daily: 7, weekly: 3, monthly: 2 }']),
    });
    const engine = engineApp.get(EngineService);
    const scheduledPass = async () => {
      const pass = await engine.runPass('nightly', 'act', 'queue');
      expect(pass.error).toBeUndefined();
      return pass.records.map((record) => record.outcome);
    };

    const manifest = (): Manifest =>
      JSON.parse(readFileSync(join(backupFolder(), 'acme', 'manifest.json'), 'utf8')) as Manifest;
    const exports = projectTransferOf(harness.sandbox.state);
    for (let day = 0; day < DAYS; day++) {
      clock.set(FIRST_DAY + day * DAY_MS + 2 * 3_600_000 + 30_000);
      if (day !== PARTIAL_DAY) {
        expect(await scheduledPass()).toEqual(['done']);
      } else {
        const before = manifest().sets.map((set) => set.set);
        const lastComplete = await harness.redis.hget(`${harness.prefix}:measures`, LAST_BACKUP_FIELD);
        exports.failingExports.add(WEB);
        expect(await scheduledPass()).toEqual(['done']);
        exports.failingExports.delete(WEB);
        const [partial, ...rest] = manifest().sets;
        expect(partial).toMatchObject({
          state: 'partial',
          projects: [{ path: 'api' }],
          missing: [{ id: WEB, path: 'web', reason: expect.stringMatching(/export failed, after 3 export requests$/) }],
        });
        // Nothing pruned after a partial set, and the last complete backup is still the night before's.
        expect(rest.map((set) => set.set)).toEqual(before);
        expect(await harness.redis.hget(`${harness.prefix}:measures`, LAST_BACKUP_FIELD)).toBe(lastComplete);
      }
      // A later pass of the same day finds the day's backup and takes no other.
      clock.set(FIRST_DAY + day * DAY_MS + 14 * 3_600_000);
      expect(await scheduledPass()).toEqual(['skipped']);
    }

    const days = manifest().sets.map((entry) => entry.taken_at.slice(0, 10));
    // Complete sets only (03-15 is partial, and pruned since 03-16 is complete): daily 7: 03-09 … 03-16 but 03-15;
    // weekly 3 (ISO weeks): 03-16 (W12), 03-14 (W11), 03-08 (W10); monthly 2: 03-16, 02-28.
    expect(days).toEqual([
      '2026-03-16',
      '2026-03-14',
      '2026-03-13',
      '2026-03-12',
      '2026-03-11',
      '2026-03-10',
      '2026-03-09',
      '2026-03-08',
      '2026-02-28',
    ]);
    expect(manifest().sets.every((set) => set.state === 'complete' && set.projects.length === 2)).toBe(true);
    const folders = readdirSync(join(backupFolder(), 'acme'))
      .filter((name) => name !== 'manifest.json')
      .sort();
    expect(folders).toEqual(
      manifest()
        .sets.map((entry) => entry.set)
        .sort(),
    );
    const posts = harness.sandbox.state.requestLog.filter(
      (request) => request.method === 'POST' && request.path.endsWith('/export'),
    );
    expect(posts.filter((request) => request.path.startsWith('/api/v4/groups/'))).toHaveLength(DAYS);
    // Each project once a night, and web three times on the night its export failed.
    expect(posts.filter((request) => request.path === '/api/v4/projects/1/export')).toHaveLength(DAYS);
    expect(posts.filter((request) => request.path === `/api/v4/projects/${WEB}/export`)).toHaveLength(DAYS + 2);
    expect(harness.sandbox.state.requestLog.filter((request) => request.status === 429)).toEqual([]);
  }, 120_000);
});
