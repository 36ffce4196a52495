import type { INestApplicationContext } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { MovableClock } from '../../src/clock';
import { AuditTrail } from '../../src/engine/stores/audit';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { MetricsService } from '../../src/metrics/metrics.service';
import { POLICY_TYPES } from '../../src/policies';
import { QueueService } from '../../src/queue/queue.service';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import type { World } from '../../src/sandbox';
import { groupTransferOf } from '../../src/sandbox/group-transfer-state';
import { useEngineHarness } from '../support/engine-harness';
import { nightlyBackupPolicy, useBackupFolder } from '../support/group-backup';
import { acmeGroup, baseWorld } from '../support/world-builders';

/** Where the cluster-wide last-backup gauge of policy nightly and group acme is kept in Redis. */
const LAST_BACKUP_FIELD = JSON.stringify(['nightly', 'backup_last_success_timestamp_seconds', { group: 'acme' }]);

/**
 * group_backup end to end: the real engine, Redis and executor against the sandbox's group export, with its
 * download limit (one a second here, one a minute on the forge), writing real files.
 */

function world(): World {
  return {
    ...baseWorld({
      groups: [
        acmeGroup({ description: 'the acme group' }),
        { id: 11, path: 'platform', parent: 'acme', members: [{ user: 'alice', access_level: 'maintainer' }] },
        { id: 12, path: 'edge', parent: 'acme/platform' },
      ],
    }),
    now: undefined,
  };
}

/** The `tree/group.json` of a gzip tar (ustar headers of 512 bytes, names at 0, sizes in octal at 124). */
function groupJson(archive: Buffer): Record<string, unknown> {
  const tar = gunzipSync(archive);
  for (let offset = 0; offset + 512 <= tar.length;) {
    const name = tar
      .subarray(offset, offset + 100)
      .toString('utf8')
      .replace(/\0.*$/s, '');
    const size = parseInt(
      tar
        .subarray(offset + 124, offset + 136)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim() || '0',
      8,
    );
    if (name === '') break;
    if (name.endsWith('tree/group.json'))
      return JSON.parse(tar.subarray(offset + 512, offset + 512 + size).toString('utf8')) as Record<string, unknown>;
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error('no tree/group.json in the archive');
}

describe('group_backup against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'group-backup', world, policyTypes: POLICY_TYPES });
  const backupFolder = useBackupFolder(() => harness.sandbox.url);

  const app = (keep = '{ last: 2 }', fields: string[] = []) =>
    harness.app({ dryRun: false, policies: nightlyBackupPolicy(backupFolder(), [`keep: ${keep}`, ...fields]) });

  const manifest = (): Manifest =>
    JSON.parse(readFileSync(join(backupFolder(), 'acme', 'manifest.json'), 'utf8')) as Manifest;

  /** The newest set's folder. */
  const setFolder = (): string => join(backupFolder(), 'acme', manifest().sets[0]?.set ?? '');

  it('plan shows the set and what retention keeps; once writes a verified set of the group tree and its projects, listed in the manifest', async () => {
    const engineApp = await app();
    const plan = await harness.pass(engineApp, 'nightly', 'plan');
    expect(plan.decisions.map((decision) => [decision.action, decision.target])).toEqual([['backup', 'group acme']]);
    expect(plan.decisions[0]?.reason).toMatch(
      /^back up now, as asked \(last backup never\); next scheduled backup \d{4}-\d\d-\d\dT02:00:00.000Z$/,
    );
    expect(plan.decisions[0]?.details).toEqual([
      'the set: the group archive and 2 projects, about 2 min at 6 project exports a minute',
      'keeps the new set, the only one',
    ]);
    expect(readdirSync(backupFolder())).toEqual([]);

    const pass = await harness.pass(engineApp, 'nightly', 'act');
    expect(pass.records.map((record) => record.outcome)).toEqual(['done']);
    const names = readdirSync(join(backupFolder(), 'acme')).sort();
    expect(names).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\dT\d{6}Z$/), 'manifest.json']);
    const set = names[0] ?? '';
    expect(readdirSync(join(backupFolder(), 'acme', set)).sort()).toEqual(['group.tar.gz', 'projects', 'set.json']);
    expect(readdirSync(join(backupFolder(), 'acme', set, 'projects')).sort()).toEqual(['api.tar.gz', 'web.tar.gz']);
    const fingerprint = (file: string) => {
      const bytes = readFileSync(join(backupFolder(), 'acme', set, file));
      return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    };
    const bytes = readFileSync(join(backupFolder(), 'acme', set, 'group.tar.gz'));
    expect(manifest()).toMatchObject({
      version: 2,
      group: { id: 10, full_path: 'acme' },
      sets: [
        {
          set,
          state: 'complete',
          group_archive: { file: 'group.tar.gz', ...fingerprint('group.tar.gz') },
          projects: [
            { id: 1, path: 'api', name: 'API', file: 'projects/api.tar.gz', ...fingerprint('projects/api.tar.gz') },
            { id: 2, path: 'web', file: 'projects/web.tar.gz', ...fingerprint('projects/web.tar.gz') },
          ],
          missing: [],
        },
      ],
    });
    // The set's own description says the same, with the group it was taken of.
    const { sets, ...head } = manifest();
    expect(JSON.parse(readFileSync(join(backupFolder(), 'acme', set, 'set.json'), 'utf8'))).toEqual({
      version: 1,
      kind: 'forgewarden-backup-set',
      group: head.group,
      ...sets[0],
    });
    const content = groupJson(bytes);
    expect(content).toMatchObject({
      path: 'acme',
      description: 'the acme group',
      subgroups: [{ path: 'platform', subgroups: [{ path: 'edge' }] }],
    });
    // The forge was asked once for each export, and never over its limits.
    const requests = harness.sandbox.state.requestLog.filter((entry) => entry.path.includes('/export'));
    expect(
      requests
        .filter((entry) => entry.method === 'POST')
        .map((entry) => entry.path)
        .sort(),
    ).toEqual(['/api/v4/groups/10/export', '/api/v4/projects/1/export', '/api/v4/projects/2/export']);
    expect(harness.sandbox.state.requestLog.filter((entry) => entry.status === 429)).toEqual([]);
    expect(pass.records[0]?.detail).toContain(`sha256 ${createHash('sha256').update(bytes).digest('hex')}`);
    expect(pass.records[0]?.detail).toContain('complete, group archive and 2 of 2 projects');
    // Nothing left in progress.
    expect(await harness.redis.keys(`${harness.prefix}:state:nightly:*`)).toEqual([]);
    // The audit trail has the set; the metrics have its time and size, cluster-wide in Redis.
    expect(await engineApp.get(AuditTrail).read(0)).toEqual([
      expect.objectContaining({
        policy: 'nightly',
        action: 'backup',
        target: 'group acme',
        outcome: 'done',
        detail: expect.stringContaining(`acme/${set}/: complete`),
      }),
    ]);
    const finished = Date.parse(manifest().sets[0]?.finished_at ?? '') / 1000;
    const written = ['group.tar.gz', 'projects/api.tar.gz', 'projects/web.tar.gz'].reduce(
      (sum, file) => sum + fingerprint(file).bytes,
      0,
    );
    const metrics = await engineApp.get(MetricsService).render();
    expect(metrics).toContain(
      `forgewarden_backup_last_success_timestamp_seconds{policy="nightly",group="acme"} ${finished}`,
    );
    expect(metrics).toContain(`forgewarden_backup_bytes_written_total{policy="nightly",group="acme"} ${written}`);
    expect(await harness.redis.hget(`${harness.prefix}:measures`, LAST_BACKUP_FIELD)).toBe(String(finished));
  });

  it('keeps what the rules say after each new backup and prunes the rest, files and manifest alike', async () => {
    const engineApp = await app('{ last: 2 }');
    const taken: string[] = [];
    for (let i = 0; i < 3; i++) {
      const pass = await harness.pass(engineApp, 'nightly', 'act');
      expect(pass.records.map((record) => record.outcome)).toEqual(['done']);
      taken.push(manifest().sets[0]?.set ?? '');
      // Sets are named to the second.
      await new Promise((resolve) => setTimeout(resolve, 1100));
    }
    expect(new Set(taken).size).toBe(3);
    expect(manifest().sets.map((entry) => entry.set)).toEqual([taken[2], taken[1]]);
    expect(
      readdirSync(join(backupFolder(), 'acme'))
        .filter((name) => name !== 'manifest.json')
        .sort(),
    ).toEqual([taken[1], taken[2]].sort());
    for (const entry of manifest().sets)
      expect(statSync(join(backupFolder(), 'acme', entry.set, 'group.tar.gz')).size).toBe(entry.group_archive.bytes);
  });

  it('takes archives of before sets (a version 1 manifest) as sets of their group archive: kept, counted and pruned alike', async () => {
    const folder = join(backupFolder(), 'acme');
    mkdirSync(folder, { recursive: true });
    const archive = (stamp: string) => {
      const bytes = Buffer.from(`archive of ${stamp}`);
      writeFileSync(join(folder, `${stamp}.tar.gz`), bytes);
      mkdirSync(join(folder, `${stamp}.relations`));
      writeFileSync(join(folder, `${stamp}.relations`, 'self.ndjson.gz'), 'self');
      const taken = `${stamp.slice(0, 13)}:${stamp.slice(13, 15)}:${stamp.slice(15, 17)}.000Z`;
      return {
        file: `${stamp}.tar.gz`,
        bytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        taken_at: taken,
        finished_at: taken,
        relations: [
          {
            file: `${stamp}.relations/self.ndjson.gz`,
            bytes: 4,
            sha256: createHash('sha256').update('self').digest('hex'),
          },
        ],
      };
    };
    const older = archive('2026-11-20T020000Z');
    const newer = archive('2026-11-21T020000Z');
    writeFileSync(
      join(folder, 'manifest.json'),
      JSON.stringify({
        version: 1,
        group: { id: 10, full_path: 'acme' },
        updated_at: newer.taken_at,
        archives: [newer, older],
      }),
    );

    const engineApp = await app('{ last: 2 }');
    const plan = await harness.pass(engineApp, 'nightly', 'plan');
    expect(plan.decisions[0]?.details?.slice(1)).toEqual([
      'keeps 2 sets with the new one (3 complete sets counted)',
      `would prune ${older.file}`,
      'if the new set ends partial, nothing is pruned',
    ]);
    const pass = await harness.pass(engineApp, 'nightly', 'act');
    expect(pass.records[0]?.detail).toContain(`pruned ${older.file}`);
    const [fresh, legacy, ...rest] = manifest().sets;
    expect(rest).toEqual([]);
    expect(manifest().version).toBe(2);
    expect(fresh).toMatchObject({ state: 'complete', projects: [{ path: 'api' }, { path: 'web' }] });
    expect(legacy).toMatchObject({
      set: '2026-11-21T020000Z',
      legacy: true,
      state: 'complete',
      group_archive: { file: 'group.tar.gz', bytes: newer.bytes, sha256: newer.sha256 },
      relations: [{ file: 'group.relations/self.ndjson.gz' }],
    });
    expect(readdirSync(folder).sort()).toEqual(
      [fresh?.set, newer.file, '2026-11-21T020000Z.relations', 'manifest.json'].sort(),
    );
  });

  it('a backup restored by the import API recreates the group, and exporting it again gives the same content', async () => {
    const engineApp = await app();
    await harness.pass(engineApp, 'nightly', 'act');
    const file = join(setFolder(), 'group.tar.gz');
    const { GitlabClient } = await import('../../src/gitlab/client');
    const client = engineApp.get(GitlabClient);
    expect((await client.namespaces.exists('acme-restored')).exists).toBe(false);
    await client.groupTransfer.import({ name: 'acme-restored', path: 'acme-restored', file });
    await harness.sandbox.state.whenIdle();
    const restored = await client.groups.show('acme-restored', { with_projects: false });
    expect((await client.namespaces.exists('acme-restored')).exists).toBe(true);
    const again = join(backupFolder(), 'again.tar.gz');
    await client.groupTransfer.scheduleExport(restored.id);
    await harness.sandbox.state.whenIdle();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await client.groupTransfer.downloadExport(restored.id, again);
    const strip = (content: Record<string, unknown>) => ({
      ...content,
      path: undefined,
      name: undefined,
      visibility: undefined,
      members: undefined,
    });
    expect(strip(groupJson(readFileSync(again)))).toEqual(strip(groupJson(readFileSync(file))));
  });

  /** One backup in place under `keep: { last: 1 }`; then a second pass, after `breakIt`, must leave it as it was. */
  async function failingSecondBackup(
    breakIt: (engineApp: INestApplicationContext) => Promise<PassResult>,
  ): Promise<PassResult> {
    const engineApp = await app('{ last: 1 }');
    await harness.pass(engineApp, 'nightly', 'act');
    const before = manifest();
    // Sets are named to the second.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const pass = await breakIt(engineApp);
    expect(manifest()).toEqual(before);
    // The failed set is not finished: no group archive, no set.json; its projects' archives wait for the set to be
    // carried on by a later pass.
    const others = readdirSync(join(backupFolder(), 'acme')).filter(
      (name) => !name.startsWith('.') && name !== 'manifest.json' && name !== before.sets[0]?.set,
    );
    expect(others).toHaveLength(1);
    for (const other of others)
      expect(readdirSync(join(backupFolder(), 'acme', other)).filter((name) => !name.startsWith('.'))).toEqual([
        'projects',
      ]);
    expect(readdirSync(join(backupFolder(), 'acme', before.sets[0]?.set ?? '')).sort()).toEqual([
      'group.tar.gz',
      'projects',
      'set.json',
    ]);
    return pass;
  }

  it('a backup whose archive fails verification prunes nothing and keeps no part of it', async () => {
    const transfer = groupTransferOf(harness.sandbox.state);
    const pass = await failingSecondBackup(async (engineApp) => {
      // The forge hands out a cut-off archive: the export is stored, then half of it is thrown away.
      transfer.exports.delete(10);
      const running = harness.pass(engineApp, 'nightly', 'act');
      while (!transfer.exports.has(10)) await new Promise((resolve) => setTimeout(resolve, 5));
      const stored = transfer.exports.get(10)!;
      stored.data = stored.data.subarray(0, Math.floor(stored.data.length / 2));
      return running;
    });
    expect(pass.records.map((record) => [record.outcome, record.detail])).toEqual([
      ['failed', expect.stringMatching(/truncated/)],
    ]);
    for (const name of readdirSync(join(backupFolder(), 'acme'))) {
      if (name !== 'manifest.json')
        expect(readdirSync(join(backupFolder(), 'acme', name)).filter((file) => file.endsWith('.partial'))).toEqual([]);
    }
  });

  it('a backup whose download the forge refuses prunes nothing', async () => {
    const pass = await failingSecondBackup(async (engineApp) => {
      harness.sandbox.state.faults.add({ method: 'GET', path: '/export/download$', status: 500 });
      return harness.pass(engineApp, 'nightly', 'act');
    });
    expect(pass.records.map((record) => [record.outcome, record.detail])).toEqual([
      ['failed', expect.stringMatching(/500/)],
    ]);
  });

  it('a set carried on trusts the disk over its record: a project archive removed meanwhile is exported again, the others are not', async () => {
    // The daemon on the forge's clock: the failed backup stays uncertain for a while, and the clock moves past it.
    const clock = harness.sandbox.state.clock;
    const engineApp = await harness.app({ dryRun: false, clock, policies: nightlyBackupPolicy(backupFolder()) });
    // The group's download refused: the set stops with both projects in place and is carried on by the next pass.
    harness.sandbox.state.faults.add({ method: 'GET', path: '^/api/v4/groups/10/export/download$', status: 500 });
    const failed = await harness.pass(engineApp, 'nightly', 'act');
    expect(failed.records.map((record) => record.outcome)).toEqual(['failed']);
    harness.sandbox.state.faults.clear();
    const [set] = readdirSync(join(backupFolder(), 'acme'));
    expect(readdirSync(join(backupFolder(), 'acme', set ?? '', 'projects')).sort()).toEqual([
      'api.tar.gz',
      'web.tar.gz',
    ]);
    rmSync(join(backupFolder(), 'acme', set ?? '', 'projects', 'web.tar.gz'));

    clock.advance(15 * 60_000);
    const pass = await harness.pass(engineApp, 'nightly', 'act');
    expect(pass.records.map((record) => record.outcome)).toEqual(['done']);
    expect(manifest().sets[0]).toMatchObject({ set, state: 'complete', projects: [{ path: 'api' }, { path: 'web' }] });
    const web = readFileSync(join(backupFolder(), 'acme', set ?? '', 'projects', 'web.tar.gz'));
    expect(manifest().sets[0]?.projects[1]).toMatchObject({
      bytes: web.length,
      sha256: createHash('sha256').update(web).digest('hex'),
    });
    const exports = harness.sandbox.state.requestLog
      .filter((request) => request.method === 'POST' && request.path.startsWith('/api/v4/projects/'))
      .map((request) => request.path);
    expect(exports.sort()).toEqual([
      '/api/v4/projects/1/export',
      '/api/v4/projects/2/export',
      '/api/v4/projects/2/export',
    ]);
  });

  it('backs up a group tree `concurrency` groups side by side: every export is asked for before the first download', async () => {
    const engineApp = await app('{ last: 2 }', ['groups: ["acme/**"]', 'concurrency: 3']);
    const pass = await harness.pass(engineApp, 'nightly', 'act');
    expect(pass.records.map((record) => [record.decision.target, record.outcome])).toEqual([
      ['group acme', 'done'],
      ['group acme/platform', 'done'],
      ['group acme/platform/edge', 'done'],
    ]);
    const log = harness.sandbox.state.requestLog;
    const exports = log.flatMap((request, index) =>
      request.method === 'POST' && /^\/api\/v4\/groups\/\d+\/export$/.test(request.path) ? [index] : [],
    );
    const firstDownload = log.findIndex(
      (request) => /^\/api\/v4\/groups\/\d+\/export\/download$/.test(request.path) && request.status === 200,
    );
    expect(exports).toHaveLength(3);
    expect(Math.max(...exports)).toBeLessThan(firstDownload);
    for (const folder of ['acme', 'acme/platform', 'acme/platform/edge']) {
      const listed = JSON.parse(readFileSync(join(backupFolder(), folder, 'manifest.json'), 'utf8')) as Manifest;
      expect(listed.group.full_path).toBe(folder);
      expect(listed.sets).toHaveLength(1);
    }
  });

  it('with relations, downloads every relation once its export finished, verified and listed with the archive', async () => {
    const engineApp = await app('{ last: 2 }', ['relations: true']);
    const pass = await harness.pass(engineApp, 'nightly', 'act');
    expect(pass.records.map((record) => record.outcome)).toEqual(['done']);
    const [entry] = manifest().sets;
    const folder = join(setFolder(), 'group.relations');
    const relations = ['badges', 'boards', 'labels', 'members', 'milestones', 'self'].map(
      (relation) => `${relation}.ndjson.gz`,
    );
    expect(readdirSync(folder).sort()).toEqual(relations);
    expect(entry?.relations?.map((file) => file.file)).toEqual(relations.map((name) => `group.relations/${name}`));
    for (const file of entry?.relations ?? []) {
      const bytes = readFileSync(join(setFolder(), file.file));
      expect(file).toMatchObject({ bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
      // Each line of each file is one JSON record.
      for (const line of gunzipSync(bytes).toString('utf8').split('\n').filter(Boolean))
        expect(() => JSON.parse(line) as unknown).not.toThrow();
    }
    const self = gunzipSync(readFileSync(join(folder, 'self.ndjson.gz'))).toString('utf8');
    expect(JSON.parse(self.split('\n')[0] ?? '{}')).toMatchObject({ path: 'acme' });
    const requests = harness.sandbox.state.requestLog.filter((request) => request.path.includes('/export_relations'));
    expect(requests.filter((request) => request.method === 'POST').map((request) => request.path)).toEqual([
      '/api/v4/groups/10/export_relations',
    ]);
    expect(requests.filter((request) => request.status === 429)).toEqual([]);
  });

  it('a scheduled pass that fails as a whole is tried again after 5, 10, 20 minutes…, never past the next scheduled run', async () => {
    const clock = new MovableClock(new Date('2030-01-01T02:00:30.000Z'));
    const engineApp = await harness.app({ dryRun: false, clock, policies: nightlyBackupPolicy(backupFolder()) });
    const engine = engineApp.get(EngineService);
    // A 500 is final for the client, so each failed pass is one request, not four with backoff between.
    harness.sandbox.state.faults.add({ method: 'GET', path: '^/api/v4/groups/', status: 500 });
    const failedPass = async () => {
      const pass = await engine.runPass('nightly', 'act', 'queue');
      expect(pass.error).toMatch(/500/);
      return pass.nextPassAt?.toISOString();
    };
    expect(await failedPass()).toBe('2030-01-01T02:06:00.000Z');
    expect(
      await harness.redis.keys(`${harness.prefix}:*extra:nightly:${Date.parse('2030-01-01T02:06:00.000Z')}*`),
    ).toHaveLength(1);
    expect(await failedPass()).toBe('2030-01-01T02:11:00.000Z');
    expect(await failedPass()).toBe('2030-01-01T02:21:00.000Z');
    // The ninth failure in a row waits 1280 minutes, still before the next night's run; the tenth would wait past it.
    await harness.redis.hset(`${harness.prefix}:passes:failed`, 'nightly', '8');
    expect(await failedPass()).toBe('2030-01-01T23:21:00.000Z');
    expect(await failedPass()).toBeUndefined();
    expect(readdirSync(backupFolder())).toEqual([]);

    // The forge is back: the pass succeeds and the next failure waits 5 minutes again.
    harness.sandbox.state.faults.clear();
    expect((await engine.runPass('nightly', 'act', 'queue')).error).toBeUndefined();
    expect(await harness.redis.hget(`${harness.prefix}:passes:failed`, 'nightly')).toBeNull();
  });

  it('a daemon starting after a scheduled pass was killed in it runs that pass at once, and clears the mark when it ends', async () => {
    const engineApp = await app();
    // What a process killed in a scheduled pass leaves behind (the pass marks itself running as it begins).
    await harness.redis.hset(`${harness.prefix}:passes:running`, 'nightly', '2030-01-01T02:00:00.000Z');
    engineApp.get(QueueService).startWorking();
    await engineApp.get(EngineService).startDaemon();
    const deadline = Date.now() + 20_000;
    // Done when the backup is recorded and the pass has ended (its mark is cleared as it ends, after the action).
    const ended = async () =>
      (await harness.redis.hget(`${harness.prefix}:measures`, LAST_BACKUP_FIELD)) !== null &&
      (await harness.redis.hget(`${harness.prefix}:passes:running`, 'nightly')) === null;
    while (!(await ended()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(manifest().sets).toHaveLength(1);
    expect(await harness.redis.hget(`${harness.prefix}:passes:running`, 'nightly')).toBeNull();
  });
});
