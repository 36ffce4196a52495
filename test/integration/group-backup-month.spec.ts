import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineService } from '../../src/engine/engine.service';
import { POLICY_TYPES } from '../../src/policies';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import { useEngineHarness } from '../support/engine-harness';
import { nightlyBackupPolicy, useBackupFolder } from '../support/group-backup';
import { acmeGroup, baseWorld } from '../support/world-builders';

/**
 * A month of nightly backups through the real engine: the forge's clock and the daemon's move together a day at a
 * time, each scheduled pass backs up and prunes, and what is left at the end is restic's answer for the keep rules.
 */

const FIRST_DAY = Date.parse('2026-02-14T00:00:00.000Z');
const DAYS = 31;
const DAY_MS = 86_400_000;

describe('group_backup retention over a month of scheduled passes', () => {
  const harness = useEngineHarness({
    name: 'group-backup-month',
    world: () => baseWorld({ groups: [acmeGroup()], now: new Date(FIRST_DAY + 3_600_000).toISOString() }),
    policyTypes: POLICY_TYPES,
  });
  const backupFolder = useBackupFolder(() => harness.sandbox.url);

  it('keeps exactly the daily, weekly and monthly backups restic would keep, in files and in the manifest', async () => {
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

    for (let day = 0; day < DAYS; day++) {
      clock.set(FIRST_DAY + day * DAY_MS + 2 * 3_600_000 + 30_000);
      expect(await scheduledPass()).toEqual(['done']);
      // A later pass of the same day finds the day's backup and takes no other.
      clock.set(FIRST_DAY + day * DAY_MS + 14 * 3_600_000);
      expect(await scheduledPass()).toEqual(['skipped']);
    }

    const manifest = JSON.parse(readFileSync(join(backupFolder(), 'acme', 'manifest.json'), 'utf8')) as Manifest;
    const days = manifest.archives.map((entry) => entry.taken_at.slice(0, 10));
    // daily 7: 03-10 … 03-16; weekly 3 (ISO weeks): 03-16 (W12), 03-15 (W11), 03-08 (W10); monthly 2: 03-16, 02-28.
    expect(days).toEqual(['2026-03-16', '2026-03-15', '2026-03-14', '2026-03-13', '2026-03-12', '2026-03-11', '2026-03-10', '2026-03-08', '2026-02-28']);
    const files = readdirSync(join(backupFolder(), 'acme')).filter((name) => name !== 'manifest.json').sort();
    expect(files).toEqual(manifest.archives.map((entry) => entry.file).sort());
    expect(harness.sandbox.state.requestLog.filter((request) => request.method === 'POST' && request.path.endsWith('/export'))).toHaveLength(DAYS);
  }, 120_000);
});
