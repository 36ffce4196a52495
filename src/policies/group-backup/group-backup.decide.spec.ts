import { SKIP } from '../../engine/policy';
import { BACKUP, decideGroupBackups, followUpPass, type GroupBackupSnapshot, type GroupSnapshot, type InflightBackup } from './group-backup.decide';
import { archiveName, type ManifestEntry, stampOf } from './group-backup.files';
import { type GroupBackupConfig, groupBackupPolicy } from './group-backup.schema';

/** A Tuesday, eight hours after the nightly 02:00 UTC run. */
const NOW = new Date('2026-11-24T10:00:00.000Z');
const LATEST_RUN = '2026-11-24T02:00:00.000Z';
const NEXT = 'next scheduled backup 2026-11-25T02:00:00.000Z';

/** A group_backup policy as written in YAML, parsed by the real schema: acme, nightly at 02:00 UTC, every backup kept. */
function aBackupConfig(fields: Record<string, unknown> = {}): GroupBackupConfig {
  return groupBackupPolicy.schema.parse({
    name: 'nightly-backup',
    type: 'group_backup',
    groups: ['acme'],
    schedule: '0 2 * * *',
    destination: '/var/backups/forge',
    ...fields,
  });
}

/** An archive the manifest lists, taken at `takenAt` and named after it. */
function anArchive(takenAt: string): ManifestEntry {
  const at = new Date(takenAt);
  return {
    file: archiveName(stampOf(at)),
    bytes: 1024,
    sha256: `sha-${stampOf(at)}`,
    taken_at: takenAt,
    finished_at: new Date(at.getTime() + 300_000).toISOString(),
  };
}

/** Group acme (id 7), its archives newest first. */
function aGroup(archives: readonly ManifestEntry[] = [], fields: Partial<GroupSnapshot> = {}): GroupSnapshot {
  return { id: 7, fullPath: 'acme', archives, unlisted: [], ...fields };
}

function aSnapshot(groups: readonly GroupSnapshot[], occasion: GroupBackupSnapshot['occasion'] = 'schedule'): GroupBackupSnapshot {
  return { groups, occasion };
}

function decideOne(group: GroupSnapshot, options: { occasion?: GroupBackupSnapshot['occasion']; config?: Record<string, unknown>; now?: Date } = {}) {
  const decisions = decideGroupBackups(aBackupConfig(options.config), aSnapshot([group], options.occasion), options.now ?? NOW);
  expect(decisions).toHaveLength(1);
  return decisions[0];
}

describe('group_backup decide: scheduled passes', () => {
  it('backs up a group never backed up, keyed by the latest scheduled run', () => {
    expect(decideOne(aGroup())).toEqual({
      action: BACKUP,
      target: 'group acme',
      key: `backup:7:${LATEST_RUN}`,
      reason: `scheduled at ${LATEST_RUN}, last backup never; ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: NOW.toISOString(), key: `backup:7:${LATEST_RUN}` },
      details: ['keeps every backup (1 with the new one): no keep rules'],
    });
  });

  it('skips a group backed up after the latest run, and previews the retention of the next run', () => {
    const group = aGroup([anArchive('2026-11-24T02:00:05.000Z'), anArchive('2026-11-23T02:00:05.000Z')]);
    // Counted from the next run (the 25th), two days keep the 25th and 24th; counted from now they would keep the 24th and 23rd.
    expect(decideOne(group, { config: { keep: { daily: 2 } } })).toEqual({
      action: SKIP,
      target: 'group acme',
      key: 'backup:7',
      reason: `skip: backed up at 2026-11-24T02:00:05.000Z, after the run scheduled at ${LATEST_RUN}; ${NEXT}`,
      params: {},
      details: ['keeps 2 backups with the new one', 'would prune 2026-11-23T020005Z.tar.gz'],
    });
  });

  it('backs up a group whose newest archive is older than the latest run', () => {
    expect(decideOne(aGroup([anArchive('2026-11-23T02:00:05.000Z')]))).toEqual({
      action: BACKUP,
      target: 'group acme',
      key: `backup:7:${LATEST_RUN}`,
      reason: `scheduled at ${LATEST_RUN}, last backup 2026-11-23T02:00:05.000Z; ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: NOW.toISOString(), key: `backup:7:${LATEST_RUN}` },
      details: ['keeps every backup (2 with the new one): no keep rules'],
    });
  });

  it('counts an archive taken at the very instant of the run as that run’s backup', () => {
    expect(decideOne(aGroup([anArchive(LATEST_RUN)])).action).toBe(SKIP);
  });

  it('gives the same key for the same time and snapshot, so a repeated pass is the same action', () => {
    const snapshot = aSnapshot([aGroup([anArchive('2026-11-23T02:00:05.000Z')])]);
    const first = decideGroupBackups(aBackupConfig(), snapshot, NOW);
    const second = decideGroupBackups(aBackupConfig(), snapshot, NOW);
    expect(second).toEqual(first);
    expect(first[0].key).toBe(`backup:7:${LATEST_RUN}`);
  });

  it('gives the same key all through one cron period, so two replicas or two ticks of it take one backup', () => {
    const group = aGroup([anArchive('2026-11-23T02:00:05.000Z')]);
    const keys = ['2026-11-24T02:00:00.001Z', '2026-11-24T10:00:00.000Z', '2026-11-25T01:59:59.999Z'].map((now) => decideOne(group, { now: new Date(now) }).key);
    expect(keys).toEqual([`backup:7:${LATEST_RUN}`, `backup:7:${LATEST_RUN}`, `backup:7:${LATEST_RUN}`]);
    expect(decideOne(group, { now: new Date('2026-11-25T01:59:59.999Z') }).params).toMatchObject({ taken_at: '2026-11-25T01:59:59.999Z' });
  });

  it('gives a new key once the next run has passed', () => {
    const decision = decideOne(aGroup([anArchive('2026-11-24T02:00:05.000Z')]), { now: new Date('2026-11-25T02:00:01.000Z') });
    expect(decision).toMatchObject({
      action: BACKUP,
      key: 'backup:7:2026-11-25T02:00:00.000Z',
      reason: 'scheduled at 2026-11-25T02:00:00.000Z, last backup 2026-11-24T02:00:05.000Z; next scheduled backup 2026-11-26T02:00:00.000Z',
    });
  });

  it('counts a pass that starts exactly on the tick as that run’s pass, not the one before it', () => {
    const decision = decideOne(aGroup([anArchive('2026-11-24T02:00:05.000Z')]), { now: new Date('2026-11-25T02:00:00.000Z') });
    expect(decision).toMatchObject({ action: BACKUP, key: 'backup:7:2026-11-25T02:00:00.000Z' });
    expect(decision.reason).toMatch(/; next scheduled backup 2026-11-26T02:00:00.000Z$/);
  });
});

describe('group_backup decide: time zones', () => {
  it.each<[string, string, string, string]>([
    ['in winter (CET) 02:00 in Berlin is 01:00Z', '2026-01-15T10:00:00.000Z', '2026-01-15T01:00:00.000Z', '2026-01-16T01:00:00.000Z'],
    ['in summer (CEST) 02:00 in Berlin is 00:00Z', '2026-07-15T10:00:00.000Z', '2026-07-15T00:00:00.000Z', '2026-07-16T00:00:00.000Z'],
  ])('%s', (_title, now, latestRun, nextRun) => {
    const decision = decideOne(aGroup(), { config: { timezone: 'Europe/Berlin' }, now: new Date(now) });
    expect(decision).toMatchObject({
      action: BACKUP,
      key: `backup:7:${latestRun}`,
      reason: `scheduled at ${latestRun}, last backup never; next scheduled backup ${nextRun}`,
    });
  });

  it('skips in Berlin a group backed up after the local 02:00 run that would be due under UTC', () => {
    const decision = decideOne(aGroup([anArchive('2026-01-15T01:00:05.000Z')]), { config: { timezone: 'Europe/Berlin' }, now: new Date('2026-01-15T10:00:00.000Z') });
    expect(decision).toMatchObject({
      action: SKIP,
      reason: 'skip: backed up at 2026-01-15T01:00:05.000Z, after the run scheduled at 2026-01-15T01:00:00.000Z; next scheduled backup 2026-01-16T01:00:00.000Z',
    });
  });
});

describe('group_backup decide: backups asked for by command', () => {
  it('backs up now even when a backup exists after the latest run, keyed by the time it is asked', () => {
    const key = `backup:7:${stampOf(NOW)}`;
    expect(key).toBe('backup:7:2026-11-24T100000Z');
    expect(decideOne(aGroup([anArchive('2026-11-24T02:00:05.000Z')]), { occasion: 'command' })).toEqual({
      action: BACKUP,
      target: 'group acme',
      key,
      reason: `back up now, as asked (last backup 2026-11-24T02:00:05.000Z); ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: NOW.toISOString(), key },
      details: ['keeps every backup (2 with the new one): no keep rules'],
    });
  });

  it('says when a group was never backed up', () => {
    expect(decideOne(aGroup(), { occasion: 'command' }).reason).toBe(`back up now, as asked (last backup never); ${NEXT}`);
  });
});

describe('group_backup decide: a backup begun and not finished', () => {
  const INFLIGHT: InflightBackup = {
    key: `backup:7:${LATEST_RUN}`,
    taken_at: '2026-11-24T02:00:03.000Z',
    export_requested_at: '2026-11-24T02:00:04.000Z',
  };

  it.each<GroupBackupSnapshot['occasion']>(['schedule', 'command'])('is carried on under its own key and time on a %s pass', (occasion) => {
    const group = aGroup([anArchive('2026-11-24T02:00:05.000Z')], { inflight: INFLIGHT });
    expect(decideOne(group, { occasion })).toEqual({
      action: BACKUP,
      target: 'group acme',
      key: INFLIGHT.key,
      reason: `carry on the backup begun at 2026-11-24T02:00:03.000Z from the export requested at 2026-11-24T02:00:04.000Z; ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: '2026-11-24T02:00:03.000Z', key: INFLIGHT.key },
      details: ['keeps every backup (2 with the new one): no keep rules'],
    });
  });

  it('is carried on from the export when no export was requested yet', () => {
    const inflight: InflightBackup = { key: INFLIGHT.key, taken_at: INFLIGHT.taken_at };
    expect(decideOne(aGroup([], { inflight })).reason).toBe(`carry on the backup begun at 2026-11-24T02:00:03.000Z from the export; ${NEXT}`);
  });

  it('is carried on from its prune when one was cut short, and counts its archive once when the manifest lists it', () => {
    const begun = anArchive(INFLIGHT.taken_at);
    const inflight: InflightBackup = { ...INFLIGHT, pruning: ['2026-11-22T020005Z.tar.gz'] };
    const group = aGroup([begun, anArchive('2026-11-23T02:00:05.000Z')], { inflight });
    expect(decideOne(group, { config: { keep: { last: 2 } } })).toMatchObject({
      key: INFLIGHT.key,
      reason: `carry on the backup begun at 2026-11-24T02:00:03.000Z from its prune; ${NEXT}`,
      details: ['keeps all 2 backups with the new one'],
    });
  });
});

describe('group_backup decide: the retention preview in the details', () => {
  const TWO = [anArchive('2026-11-23T02:00:05.000Z'), anArchive('2026-11-22T02:00:05.000Z')];

  it('names what the keep rules would prune once the new backup is in place', () => {
    expect(decideOne(aGroup(TWO), { config: { keep: { last: 2 } } }).details).toEqual(['keeps 2 backups with the new one', 'would prune 2026-11-22T020005Z.tar.gz']);
  });

  it('keeps every backup without keep rules', () => {
    expect(decideOne(aGroup(TWO)).details).toEqual(['keeps every backup (3 with the new one): no keep rules']);
  });

  it('says so when the rules prune nothing', () => {
    expect(decideOne(aGroup(TWO), { config: { keep: { last: 5 } } }).details).toEqual(['keeps all 3 backups with the new one']);
  });
});

describe('group_backup decide: archives the manifest does not list', () => {
  const UNLISTED = ['2026-11-01T020000Z.tar.gz', '2026-11-02T020000Z.tar.gz'];

  it('names them after the retention preview of a backup, leaving them out of its count', () => {
    expect(decideOne(aGroup([], { unlisted: UNLISTED })).details).toEqual([
      'keeps every backup (1 with the new one): no keep rules',
      'not in the manifest, left alone: 2026-11-01T020000Z.tar.gz',
      'not in the manifest, left alone: 2026-11-02T020000Z.tar.gz',
    ]);
  });

  it('names them in a skip too', () => {
    const decision = decideOne(aGroup([anArchive('2026-11-24T02:00:05.000Z')], { unlisted: UNLISTED }), { config: { keep: { last: 1 } } });
    expect(decision.action).toBe(SKIP);
    expect(decision.details).toEqual([
      'keeps only the new backup',
      'would prune 2026-11-24T020005Z.tar.gz',
      'not in the manifest, left alone: 2026-11-01T020000Z.tar.gz',
      'not in the manifest, left alone: 2026-11-02T020000Z.tar.gz',
    ]);
  });
});

describe('group_backup decide: several groups', () => {
  it('gives one decision per group, in the snapshot’s order', () => {
    const groups = [
      aGroup([anArchive('2026-11-24T02:00:05.000Z')], { id: 9, fullPath: 'zeta' }),
      aGroup([], { id: 7, fullPath: 'acme' }),
      aGroup([], { id: 8, fullPath: 'acme/tools', inflight: { key: 'backup:8:2026-11-24T02:00:00.000Z', taken_at: '2026-11-24T02:00:03.000Z' } }),
    ];
    expect(decideGroupBackups(aBackupConfig(), aSnapshot(groups), NOW).map((d) => [d.action, d.target, d.key])).toEqual([
      [SKIP, 'group zeta', 'backup:9'],
      [BACKUP, 'group acme', `backup:7:${LATEST_RUN}`],
      [BACKUP, 'group acme/tools', 'backup:8:2026-11-24T02:00:00.000Z'],
    ]);
  });

  it('decides nothing for no groups', () => {
    expect(decideGroupBackups(aBackupConfig(), aSnapshot([]), NOW)).toEqual([]);
  });
});

describe('group_backup decide: a backup in progress older than a period of its schedule', () => {
  /** Begun on the night of the 22nd, two runs (the 23rd's and the 24th's) before NOW. */
  const OLD: InflightBackup = { key: 'backup:7:2026-11-22T02:00:00.000Z', taken_at: '2026-11-22T02:00:30.000Z' };
  const DROPPED = 'the backup in progress begun at 2026-11-22T02:00:30.000Z (no export was requested) is dropped, older than a period of the schedule (runs at 2026-11-23T02:00:00.000Z and 2026-11-24T02:00:00.000Z since)';

  it('is begun afresh under this run’s key and time, the reason saying what is dropped and why', () => {
    expect(decideOne(aGroup([anArchive('2026-11-21T02:00:05.000Z')], { inflight: OLD }))).toEqual({
      action: BACKUP,
      target: 'group acme',
      key: `backup:7:${LATEST_RUN}`,
      reason: `scheduled at ${LATEST_RUN}, last backup 2026-11-21T02:00:05.000Z; begun afresh: ${DROPPED}; ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: NOW.toISOString(), key: `backup:7:${LATEST_RUN}` },
      details: ['keeps every backup (2 with the new one): no keep rules'],
    });
  });

  it('is begun afresh by a command too', () => {
    expect(decideOne(aGroup([], { inflight: OLD }), { occasion: 'command' })).toMatchObject({
      key: `backup:7:${stampOf(NOW)}`,
      reason: `back up now, as asked (last backup never); begun afresh: ${DROPPED}; ${NEXT}`,
    });
  });

  it('counts from its export when one was requested: an export of the 23rd, after the run before the latest, is carried on', () => {
    const inflight: InflightBackup = { ...OLD, export_requested_at: '2026-11-23T09:00:00.000Z' };
    expect(decideOne(aGroup([], { inflight }))).toMatchObject({ key: OLD.key, reason: `carry on the backup begun at ${OLD.taken_at} from the export requested at 2026-11-23T09:00:00.000Z; ${NEXT}` });
  });

  it('is carried on the day after it began (a daemon killed in the night and started in the morning loses nothing)', () => {
    const inflight: InflightBackup = { key: 'backup:7:2026-11-23T02:00:00.000Z', taken_at: '2026-11-23T02:00:30.000Z', export_requested_at: '2026-11-23T02:00:31.000Z' };
    expect(decideOne(aGroup([], { inflight })).key).toBe(inflight.key);
  });

  it.each<[string, Partial<GroupSnapshot>]>([
    ['its prune was cut short', { inflight: { ...OLD, export_requested_at: '2026-11-22T02:00:31.000Z', pruning: [] } }],
    ['its archive is in place already', { inflight: { ...OLD, export_requested_at: '2026-11-22T02:00:31.000Z' }, inflightArchived: true }],
  ])('is finished however old when %s', (_when, fields) => {
    expect(decideOne(aGroup([], fields)).key).toBe(OLD.key);
  });

  it('is named in a skip, to be dropped at the next backup', () => {
    const decision = decideOne(aGroup([anArchive('2026-11-24T02:00:05.000Z')], { inflight: OLD }));
    expect(decision.action).toBe(SKIP);
    expect(decision.details).toEqual(['keeps every backup (2 with the new one): no keep rules', `at the next backup: ${DROPPED}`]);
  });
});

describe('group_backup decide: archives the manifest lists and the disk does not hold', () => {
  it('names them after the retention preview; they are not counted, so a group whose newest archive is gone is backed up again', () => {
    const gone = anArchive('2026-11-24T02:00:05.000Z');
    const group = aGroup([anArchive('2026-11-23T02:00:05.000Z')], { notOnDisk: [{ file: gone.file, problem: 'missing from disk' }] });
    expect(decideOne(group, { config: { keep: { last: 2 } } })).toMatchObject({
      action: BACKUP,
      reason: `scheduled at ${LATEST_RUN}, last backup 2026-11-23T02:00:05.000Z; ${NEXT}`,
      details: ['keeps all 2 backups with the new one', `listed in the manifest but not counted (missing from disk): ${gone.file}`],
    });
  });
});

describe('group_backup decide: no prune while the history is shorter than the largest keep count', () => {
  it('previews the rules’ prune held back, with why', () => {
    // Three backups of the 23rd and the new one: daily 5 alone would prune the two between the newest and the oldest.
    const sameDay = [anArchive('2026-11-23T20:00:00.000Z'), anArchive('2026-11-23T12:00:00.000Z'), anArchive('2026-11-23T02:00:05.000Z')];
    expect(decideOne(aGroup(sameDay), { config: { keep: { daily: 5 } } }).details).toEqual([
      'keeps all 4 backups with the new one',
      'nothing pruned: 4 backups on disk, fewer than 5 (the largest keep count)',
    ]);
  });
});

describe('group_backup: the follow-up of a pass that could not read some groups', () => {
  const snapshot = (unreachable?: number): GroupBackupSnapshot => ({ groups: [], occasion: 'schedule', ...(unreachable ? { unreachable } : {}) });

  it.each([
    ['2026-11-24T02:00:30.000Z', '2026-11-24T02:05:00.000Z'],
    ['2026-11-24T02:05:00.000Z', '2026-11-24T02:10:00.000Z'],
    ['2026-11-24T02:10:00.400Z', '2026-11-24T02:20:00.000Z'],
    ['2026-11-24T03:00:00.000Z', '2026-11-24T03:20:00.000Z'],
    ['2026-11-24T14:00:00.000Z', '2026-11-24T23:20:00.000Z'],
  ])('after a pass at %s, looks again at %s (5, 10, 20, 40 minutes… after the run)', (now, at) => {
    expect(followUpPass(aBackupConfig(), snapshot(1), new Date(now))?.toISOString()).toBe(at);
  });

  it('asks for none past the next run, nor when every group was read', () => {
    expect(followUpPass(aBackupConfig(), snapshot(1), new Date('2026-11-24T23:30:00.000Z'))).toBeUndefined();
    expect(followUpPass(aBackupConfig(), snapshot(), new Date('2026-11-24T02:00:30.000Z'))).toBeUndefined();
  });
});
