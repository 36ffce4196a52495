import { SKIP } from '../../engine/policy';
import {
  BACKUP,
  decideGroupBackups,
  followUpPass,
  type GroupBackupSnapshot,
  type GroupSnapshot,
  type InflightBackup,
  setDurationMs,
} from './group-backup.decide';
import { type ListedSet, stampOf } from './group-backup.files';
import { GROUP_ARCHIVE } from './group-backup.set';
import { type GroupBackupConfig, groupBackupPolicy } from './group-backup.schema';

/** A Tuesday, eight hours after the nightly 02:00 UTC run. */
const NOW = new Date('2026-11-24T10:00:00.000Z');
const LATEST_RUN = '2026-11-24T02:00:00.000Z';
const NEXT = 'next scheduled backup 2026-11-25T02:00:00.000Z';

/** The first line of a backup's details for the group of aGroup: 5 projects at the default 6 exports a minute. */
const SET_OF_5 = 'the set: the group archive and 5 projects, about 2 min at 6 project exports a minute';

/** A group_backup policy as written in YAML, parsed by the real schema: acme, nightly at 02:00 UTC, every set kept. */
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

/** A set the manifest lists, taken at `takenAt` and named after it: complete unless `fields` say otherwise. */
function aSet(takenAt: string, fields: Partial<ListedSet> = {}): ListedSet {
  const at = new Date(takenAt);
  return {
    set: stampOf(at),
    state: 'complete',
    taken_at: takenAt,
    finished_at: new Date(at.getTime() + 300_000).toISOString(),
    group_archive: { file: GROUP_ARCHIVE, bytes: 1024, sha256: `sha-${stampOf(at)}` },
    projects: [],
    missing: [],
    ...fields,
  };
}

/** A set that lacks a project. */
function aPartialSet(takenAt: string): ListedSet {
  return aSet(takenAt, {
    state: 'partial',
    missing: [{ id: 31, path: 'platform/api', reason: 'its export failed 3 times' }],
  });
}

/** Group acme (id 7) with 5 projects, its sets newest first. */
function aGroup(sets: readonly ListedSet[] = [], fields: Partial<GroupSnapshot> = {}): GroupSnapshot {
  return { id: 7, fullPath: 'acme', sets, unlisted: [], projects: 5, ...fields };
}

/** Group acme as the observer gives it under `projects: false`: no project count. */
function aGroupWithoutProjects(sets: readonly ListedSet[] = []): GroupSnapshot {
  return { id: 7, fullPath: 'acme', sets, unlisted: [] };
}

function aSnapshot(
  groups: readonly GroupSnapshot[],
  occasion: GroupBackupSnapshot['occasion'] = 'schedule',
): GroupBackupSnapshot {
  return { groups, occasion };
}

function decideOne(
  group: GroupSnapshot,
  options: { occasion?: GroupBackupSnapshot['occasion']; config?: Record<string, unknown>; now?: Date } = {},
) {
  const decisions = decideGroupBackups(
    aBackupConfig(options.config),
    aSnapshot([group], options.occasion),
    options.now ?? NOW,
  );
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
      details: [SET_OF_5, 'keeps every set (1 with the new one): no keep rules'],
    });
  });

  it('skips a group backed up after the latest run, and previews the retention of the next run, without a line about the set', () => {
    const group = aGroup([aSet('2026-11-24T02:00:05.000Z'), aSet('2026-11-23T02:00:05.000Z')]);
    // Counted from the next run (the 25th), two days keep the 25th and 24th; counted from now they would keep the 24th and 23rd.
    expect(decideOne(group, { config: { keep: { daily: 2 } } })).toEqual({
      action: SKIP,
      target: 'group acme',
      key: 'backup:7',
      reason: `skip: backed up at 2026-11-24T02:00:05.000Z, after the run scheduled at ${LATEST_RUN}; ${NEXT}`,
      params: {},
      details: [
        'keeps 2 sets with the new one (3 complete sets counted)',
        'would prune 2026-11-23T020005Z/',
        'if the new set ends partial, nothing is pruned',
      ],
    });
  });

  it('backs up a group whose newest set is older than the latest run', () => {
    expect(decideOne(aGroup([aSet('2026-11-23T02:00:05.000Z')]))).toEqual({
      action: BACKUP,
      target: 'group acme',
      key: `backup:7:${LATEST_RUN}`,
      reason: `scheduled at ${LATEST_RUN}, last backup 2026-11-23T02:00:05.000Z; ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: NOW.toISOString(), key: `backup:7:${LATEST_RUN}` },
      details: [SET_OF_5, 'keeps every set (2 with the new one): no keep rules'],
    });
  });

  it('counts a set taken at the very instant of the run as that run’s backup', () => {
    expect(decideOne(aGroup([aSet(LATEST_RUN)])).action).toBe(SKIP);
  });

  it('gives the same key for the same time and snapshot, so a repeated pass is the same action', () => {
    const snapshot = aSnapshot([aGroup([aSet('2026-11-23T02:00:05.000Z')])]);
    const first = decideGroupBackups(aBackupConfig(), snapshot, NOW);
    const second = decideGroupBackups(aBackupConfig(), snapshot, NOW);
    expect(second).toEqual(first);
    expect(first[0].key).toBe(`backup:7:${LATEST_RUN}`);
  });

  it('gives the same key all through one cron period, so two replicas or two ticks of it take one backup', () => {
    const group = aGroup([aSet('2026-11-23T02:00:05.000Z')]);
    const keys = ['2026-11-24T02:00:00.001Z', '2026-11-24T10:00:00.000Z', '2026-11-25T01:59:59.999Z'].map(
      (now) => decideOne(group, { now: new Date(now) }).key,
    );
    expect(keys).toEqual([`backup:7:${LATEST_RUN}`, `backup:7:${LATEST_RUN}`, `backup:7:${LATEST_RUN}`]);
    expect(decideOne(group, { now: new Date('2026-11-25T01:59:59.999Z') }).params).toMatchObject({
      taken_at: '2026-11-25T01:59:59.999Z',
    });
  });

  it('gives a new key once the next run has passed', () => {
    const decision = decideOne(aGroup([aSet('2026-11-24T02:00:05.000Z')]), {
      now: new Date('2026-11-25T02:00:01.000Z'),
    });
    expect(decision).toMatchObject({
      action: BACKUP,
      key: 'backup:7:2026-11-25T02:00:00.000Z',
      reason:
        'scheduled at 2026-11-25T02:00:00.000Z, last backup 2026-11-24T02:00:05.000Z; next scheduled backup 2026-11-26T02:00:00.000Z',
    });
  });

  it('counts a pass that starts exactly on the tick as that run’s pass, not the one before it', () => {
    const decision = decideOne(aGroup([aSet('2026-11-24T02:00:05.000Z')]), {
      now: new Date('2026-11-25T02:00:00.000Z'),
    });
    expect(decision).toMatchObject({ action: BACKUP, key: 'backup:7:2026-11-25T02:00:00.000Z' });
    expect(decision.reason).toMatch(/; next scheduled backup 2026-11-26T02:00:00.000Z$/);
  });
});

describe('group_backup decide: a set that ended partial', () => {
  const PARTIAL_OF_THE_RUN = aPartialSet('2026-11-24T02:00:05.000Z');

  it('is this run’s backup: not taken again before the next run, and named partial in the skip', () => {
    const group = aGroup([PARTIAL_OF_THE_RUN, aSet('2026-11-23T02:00:05.000Z')]);
    expect(decideOne(group)).toMatchObject({
      action: SKIP,
      key: 'backup:7',
      reason: `skip: backed up at 2026-11-24T02:00:05.000Z (partial), after the run scheduled at ${LATEST_RUN}; ${NEXT}`,
    });
  });

  it('is named partial as the last backup when the next run is due', () => {
    const decision = decideOne(aGroup([PARTIAL_OF_THE_RUN, aSet('2026-11-23T02:00:05.000Z')]), {
      now: new Date('2026-11-25T02:00:01.000Z'),
    });
    expect(decision).toMatchObject({
      action: BACKUP,
      key: 'backup:7:2026-11-25T02:00:00.000Z',
      reason:
        'scheduled at 2026-11-25T02:00:00.000Z, last backup 2026-11-24T02:00:05.000Z (partial); next scheduled backup 2026-11-26T02:00:00.000Z',
    });
  });

  it('is named partial as the last backup of a backup asked for by command', () => {
    expect(decideOne(aGroup([PARTIAL_OF_THE_RUN]), { occasion: 'command' }).reason).toBe(
      `back up now, as asked (last backup 2026-11-24T02:00:05.000Z (partial)); ${NEXT}`,
    );
  });

  it('is not named partial once a newer set is complete', () => {
    const group = aGroup([aSet('2026-11-24T02:00:05.000Z'), aPartialSet('2026-11-23T02:00:05.000Z')]);
    expect(decideOne(group, { occasion: 'command' }).reason).toBe(
      `back up now, as asked (last backup 2026-11-24T02:00:05.000Z); ${NEXT}`,
    );
  });

  it('is previewed in a skip as pruned after the next set, with the rules’ own prune', () => {
    const group = aGroup([PARTIAL_OF_THE_RUN, aSet('2026-11-23T02:00:05.000Z')]);
    expect(decideOne(group, { config: { keep: { last: 1 } } }).details).toEqual([
      'keeps only the new set',
      'would prune 2026-11-24T020005Z/ (partial, a newer set is complete)',
      'would prune 2026-11-23T020005Z/',
      'if the new set ends partial, nothing is pruned',
    ]);
  });
});

describe('group_backup decide: what the set holds and how long it takes', () => {
  it('names the group archive and the projects, and the time at the forge’s export limit', () => {
    expect(decideOne(aGroup()).details?.[0]).toBe(
      'the set: the group archive and 5 projects, about 2 min at 6 project exports a minute',
    );
  });

  it('says the set is the group archive alone when the group has no project count (projects: false)', () => {
    expect(decideOne(aGroupWithoutProjects(), { config: { projects: false } }).details).toEqual([
      'the set: the group archive alone (projects: false)',
      'keeps every set (1 with the new one): no keep rules',
    ]);
  });

  it('counts a group with no projects as the group archive and a minute', () => {
    expect(decideOne(aGroup([], { projects: 0 })).details?.[0]).toBe(
      'the set: the group archive and 0 projects, about 1 min at 6 project exports a minute',
    );
  });

  it('says "1 project" in the singular', () => {
    expect(decideOne(aGroup([], { projects: 1 })).details?.[0]).toBe(
      'the set: the group archive and 1 project, about 2 min at 6 project exports a minute',
    );
  });

  it('paces the projects at project_exports_per_minute', () => {
    // 25 projects at 10 a minute: requests over 3 minutes, and a minute for the last ones.
    expect(decideOne(aGroup([], { projects: 25 }), { config: { project_exports_per_minute: 10 } }).details?.[0]).toBe(
      'the set: the group archive and 25 projects, about 4 min at 10 project exports a minute',
    );
  });

  it('gives a set of 2 hours or more in hours and minutes', () => {
    // 1000 projects at 6 a minute: 167 minutes of requests and one more, 168 minutes.
    expect(decideOne(aGroup([], { projects: 1000 })).details?.[0]).toBe(
      'the set: the group archive and 1000 projects, about 2 h 48 min at 6 project exports a minute',
    );
  });

  it('warns when the set takes longer than the schedule’s period: 500 projects, hourly', () => {
    const decision = decideOne(aGroup([], { projects: 500 }), { config: { schedule: '0 * * * *' } });
    expect(decision.action).toBe(BACKUP);
    expect(decision.details).toEqual([
      'the set: the group archive and 500 projects, about 85 min at 6 project exports a minute',
      "warning: the set takes longer than the schedule's period (60 min between runs): a set still running when the next is due is carried on, and the next begins after it",
      'keeps every set (1 with the new one): no keep rules',
    ]);
  });

  it('does not warn for 500 projects on a nightly schedule', () => {
    expect(decideOne(aGroup([], { projects: 500 })).details).toEqual([
      'the set: the group archive and 500 projects, about 85 min at 6 project exports a minute',
      'keeps every set (1 with the new one): no keep rules',
    ]);
  });

  it('does not warn when the set takes exactly the period, and warns a minute over it', () => {
    const hourly = { config: { schedule: '0 * * * *' } };
    // 354 projects: 59 minutes of requests and one more, 60 minutes; 355 projects: 61 minutes.
    expect(
      decideOne(aGroup([], { projects: 354 }), hourly).details?.filter((line) => line.startsWith('warning:')),
    ).toEqual([]);
    expect(
      decideOne(aGroup([], { projects: 355 }), hourly).details?.filter((line) => line.startsWith('warning:')),
    ).toHaveLength(1);
  });

  it('measures the period as the shortest gap between runs: two runs an hour apart each night warn, a weekday schedule is a day', () => {
    const warned = (schedule: string, projects: number) =>
      decideOne(aGroup([], { projects }), { config: { schedule } }).details?.filter((line) =>
        line.startsWith('warning:'),
      ) ?? [];
    // 700 projects: about 118 minutes; 02:00 and 03:00 are an hour apart, though the longest gap is 23 hours.
    expect(warned('0 2,3 * * *', 700)).toEqual([expect.stringContaining('(60 min between runs)')]);
    // 1500 projects: about 251 minutes, well within the 24 hours between two weekday runs (the weekend's 72 do not count).
    expect(warned('0 2 * * 1-5', 1500)).toEqual([]);
    expect(warned('0 2 * * 1-5', 9000)).toEqual([expect.stringContaining('(24 h 0 min between runs)')]);
  });

  it('previews the retention of a set carried on under its own name, not a second set of its begin time', () => {
    // The set began at 02:00:03 and was named by its export request a second later; its prune was cut short.
    const inflight: InflightBackup = {
      key: `backup:7:${LATEST_RUN}`,
      taken_at: '2026-11-24T02:00:03.000Z',
      set: '2026-11-24T020004Z',
      pruning: [],
    };
    const decision = decideOne(
      aGroup([aSet('2026-11-24T02:00:04.000Z'), aSet('2026-11-23T02:00:05.000Z')], { inflight }),
      { config: { keep: { last: 2 } } },
    );
    expect(decision.details).toEqual([SET_OF_5, 'keeps all 2 sets with the new one']);
  });

  it('says what the set holds when a backup is carried on or asked for by command too', () => {
    const inflight: InflightBackup = { key: `backup:7:${LATEST_RUN}`, taken_at: '2026-11-24T02:00:03.000Z' };
    expect(decideOne(aGroup([], { inflight })).details?.[0]).toBe(SET_OF_5);
    expect(decideOne(aGroup([aSet('2026-11-24T02:00:05.000Z')]), { occasion: 'command' }).details?.[0]).toBe(SET_OF_5);
  });
});

describe('group_backup decide: setDurationMs', () => {
  it.each<[number, number, number]>([
    [500, 6, 85],
    [0, 6, 1],
    [1, 6, 2],
    [6, 6, 2],
    [7, 6, 3],
    [600, 600, 2],
  ])('%i projects at %i a minute take %i min', (projects, perMinute, minutes) => {
    expect(setDurationMs(projects, perMinute)).toBe(minutes * 60_000);
  });
});

describe('group_backup decide: time zones', () => {
  it.each<[string, string, string, string]>([
    [
      'in winter (CET) 02:00 in Berlin is 01:00Z',
      '2026-01-15T10:00:00.000Z',
      '2026-01-15T01:00:00.000Z',
      '2026-01-16T01:00:00.000Z',
    ],
    [
      'in summer (CEST) 02:00 in Berlin is 00:00Z',
      '2026-07-15T10:00:00.000Z',
      '2026-07-15T00:00:00.000Z',
      '2026-07-16T00:00:00.000Z',
    ],
  ])('%s', (_title, now, latestRun, nextRun) => {
    const decision = decideOne(aGroup(), { config: { timezone: 'Europe/Berlin' }, now: new Date(now) });
    expect(decision).toMatchObject({
      action: BACKUP,
      key: `backup:7:${latestRun}`,
      reason: `scheduled at ${latestRun}, last backup never; next scheduled backup ${nextRun}`,
    });
  });

  it('skips in Berlin a group backed up after the local 02:00 run that would be due under UTC', () => {
    const decision = decideOne(aGroup([aSet('2026-01-15T01:00:05.000Z')]), {
      config: { timezone: 'Europe/Berlin' },
      now: new Date('2026-01-15T10:00:00.000Z'),
    });
    expect(decision).toMatchObject({
      action: SKIP,
      reason:
        'skip: backed up at 2026-01-15T01:00:05.000Z, after the run scheduled at 2026-01-15T01:00:00.000Z; next scheduled backup 2026-01-16T01:00:00.000Z',
    });
  });
});

describe('group_backup decide: backups asked for by command', () => {
  it('backs up now even when a set exists after the latest run, keyed by the time it is asked', () => {
    const key = `backup:7:${stampOf(NOW)}`;
    expect(key).toBe('backup:7:2026-11-24T100000Z');
    expect(decideOne(aGroup([aSet('2026-11-24T02:00:05.000Z')]), { occasion: 'command' })).toEqual({
      action: BACKUP,
      target: 'group acme',
      key,
      reason: `back up now, as asked (last backup 2026-11-24T02:00:05.000Z); ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: NOW.toISOString(), key },
      details: [SET_OF_5, 'keeps every set (2 with the new one): no keep rules'],
    });
  });

  it('says when a group was never backed up', () => {
    expect(decideOne(aGroup(), { occasion: 'command' }).reason).toBe(
      `back up now, as asked (last backup never); ${NEXT}`,
    );
  });
});

describe('group_backup decide: a backup begun and not finished', () => {
  const INFLIGHT: InflightBackup = {
    key: `backup:7:${LATEST_RUN}`,
    taken_at: '2026-11-24T02:00:03.000Z',
    set: '2026-11-24T020004Z',
    export_requested_at: '2026-11-24T02:00:04.000Z',
  };

  it.each<GroupBackupSnapshot['occasion']>(['schedule', 'command'])(
    'is carried on under its own key and time on a %s pass',
    (occasion) => {
      const group = aGroup([aSet('2026-11-24T02:00:05.000Z')], { inflight: INFLIGHT });
      expect(decideOne(group, { occasion })).toEqual({
        action: BACKUP,
        target: 'group acme',
        key: INFLIGHT.key,
        reason: `carry on the backup begun at 2026-11-24T02:00:03.000Z from the export requested at 2026-11-24T02:00:04.000Z; ${NEXT}`,
        params: { group_id: 7, group_path: 'acme', taken_at: '2026-11-24T02:00:03.000Z', key: INFLIGHT.key },
        details: [SET_OF_5, 'keeps every set (2 with the new one): no keep rules'],
      });
    },
  );

  it('is carried on from the export when no export was requested yet', () => {
    const inflight: InflightBackup = { key: INFLIGHT.key, taken_at: INFLIGHT.taken_at };
    expect(decideOne(aGroup([], { inflight })).reason).toBe(
      `carry on the backup begun at 2026-11-24T02:00:03.000Z from the export; ${NEXT}`,
    );
  });

  it('is carried on from its prune when one was cut short, and counts its set once when the manifest lists it', () => {
    // The export was requested within the second the backup began, so the set bears the stamp of its start.
    const begun = aSet(INFLIGHT.taken_at);
    const inflight: InflightBackup = {
      ...INFLIGHT,
      set: begun.set,
      export_requested_at: '2026-11-24T02:00:03.500Z',
      pruning: ['2026-11-22T020005Z/'],
    };
    const group = aGroup([begun, aSet('2026-11-23T02:00:05.000Z')], { inflight, inflightArchived: true });
    expect(decideOne(group, { config: { keep: { last: 2 } } })).toMatchObject({
      key: INFLIGHT.key,
      reason: `carry on the backup begun at 2026-11-24T02:00:03.000Z from its prune; ${NEXT}`,
      details: [SET_OF_5, 'keeps all 2 sets with the new one'],
    });
  });
});

describe('group_backup decide: the retention preview in the details', () => {
  const TWO = [aSet('2026-11-23T02:00:05.000Z'), aSet('2026-11-22T02:00:05.000Z')];

  it('names what the keep rules would prune once the new set is in place, complete', () => {
    expect(decideOne(aGroup(TWO), { config: { keep: { last: 2 } } }).details).toEqual([
      SET_OF_5,
      'keeps 2 sets with the new one (3 complete sets counted)',
      'would prune 2026-11-22T020005Z/',
      'if the new set ends partial, nothing is pruned',
    ]);
  });

  it('keeps every set without keep rules', () => {
    expect(decideOne(aGroup(TWO)).details).toEqual([SET_OF_5, 'keeps every set (3 with the new one): no keep rules']);
  });

  it('says so when the rules prune nothing', () => {
    expect(decideOne(aGroup(TWO), { config: { keep: { last: 5 } } }).details).toEqual([
      SET_OF_5,
      'keeps all 3 sets with the new one',
    ]);
  });

  it('says the new set is the only one when there is none before it', () => {
    expect(decideOne(aGroup(), { config: { keep: { last: 2 } } }).details).toEqual([
      SET_OF_5,
      'keeps the new set, the only one',
    ]);
  });

  it('says the new set alone is kept under last 1', () => {
    expect(decideOne(aGroup(TWO), { config: { keep: { last: 1 } } }).details).toEqual([
      SET_OF_5,
      'keeps only the new set',
      'would prune 2026-11-23T020005Z/',
      'would prune 2026-11-22T020005Z/',
      'if the new set ends partial, nothing is pruned',
    ]);
  });

  it('would prune a partial set older than the new one, saying why, and counts only complete sets by the rules', () => {
    // last 2 counts the new set and the 22nd's: the partial set of the 23rd does not push the 22nd's out.
    const sets = [aPartialSet('2026-11-23T02:00:05.000Z'), aSet('2026-11-22T02:00:05.000Z')];
    expect(decideOne(aGroup(sets), { config: { keep: { last: 2 } } }).details).toEqual([
      SET_OF_5,
      'keeps 2 sets with the new one (2 complete sets counted)',
      'would prune 2026-11-23T020005Z/ (partial, a newer set is complete)',
      'if the new set ends partial, nothing is pruned',
    ]);
  });

  it('names a set of before sets by its archive, kept and pruned alike', () => {
    const sets = [aSet('2026-11-23T02:00:05.000Z'), aSet('2026-11-22T02:00:05.000Z', { legacy: true })];
    expect(decideOne(aGroup(sets), { config: { keep: { last: 2 } } }).details).toEqual([
      SET_OF_5,
      'keeps 2 sets with the new one (3 complete sets counted)',
      'would prune 2026-11-22T020005Z.tar.gz',
      'if the new set ends partial, nothing is pruned',
    ]);
  });
});

describe('group_backup decide: sets and archives the manifest does not list', () => {
  const UNLISTED = ['2026-11-01T020000Z.tar.gz', '2026-11-02T020000Z/'];

  it('names them after the retention preview of a backup, leaving them out of its count', () => {
    expect(decideOne(aGroup([], { unlisted: UNLISTED })).details).toEqual([
      SET_OF_5,
      'keeps every set (1 with the new one): no keep rules',
      'not in the manifest, left alone: 2026-11-01T020000Z.tar.gz',
      'not in the manifest, left alone: 2026-11-02T020000Z/',
    ]);
  });

  it('names them in a skip too', () => {
    const decision = decideOne(aGroup([aSet('2026-11-24T02:00:05.000Z')], { unlisted: UNLISTED }), {
      config: { keep: { last: 1 } },
    });
    expect(decision.action).toBe(SKIP);
    expect(decision.details).toEqual([
      'keeps only the new set',
      'would prune 2026-11-24T020005Z/',
      'if the new set ends partial, nothing is pruned',
      'not in the manifest, left alone: 2026-11-01T020000Z.tar.gz',
      'not in the manifest, left alone: 2026-11-02T020000Z/',
    ]);
  });
});

describe('group_backup decide: several groups', () => {
  it('gives one decision per group, in the snapshot’s order', () => {
    const groups = [
      aGroup([aSet('2026-11-24T02:00:05.000Z')], { id: 9, fullPath: 'zeta' }),
      aGroup([], { id: 7, fullPath: 'acme' }),
      aGroup([], {
        id: 8,
        fullPath: 'acme/tools',
        inflight: { key: 'backup:8:2026-11-24T02:00:00.000Z', taken_at: '2026-11-24T02:00:03.000Z' },
      }),
    ];
    expect(decideGroupBackups(aBackupConfig(), aSnapshot(groups), NOW).map((d) => [d.action, d.target, d.key])).toEqual(
      [
        [SKIP, 'group zeta', 'backup:9'],
        [BACKUP, 'group acme', `backup:7:${LATEST_RUN}`],
        [BACKUP, 'group acme/tools', 'backup:8:2026-11-24T02:00:00.000Z'],
      ],
    );
  });

  it('gives each group’s details its own project count', () => {
    const groups = [
      aGroup([], { id: 7, fullPath: 'acme', projects: 12 }),
      aGroup([], { id: 8, fullPath: 'beta', projects: 1 }),
    ];
    expect(decideGroupBackups(aBackupConfig(), aSnapshot(groups), NOW).map((d) => d.details?.[0])).toEqual([
      'the set: the group archive and 12 projects, about 3 min at 6 project exports a minute',
      'the set: the group archive and 1 project, about 2 min at 6 project exports a minute',
    ]);
  });

  it('decides nothing for no groups', () => {
    expect(decideGroupBackups(aBackupConfig(), aSnapshot([]), NOW)).toEqual([]);
  });
});

describe('group_backup decide: a backup in progress older than a period of its schedule', () => {
  /** Begun on the night of the 22nd, two runs (the 23rd's and the 24th's) before NOW. */
  const OLD: InflightBackup = { key: 'backup:7:2026-11-22T02:00:00.000Z', taken_at: '2026-11-22T02:00:30.000Z' };
  const DROPPED =
    'the backup in progress begun at 2026-11-22T02:00:30.000Z (no export was requested) is dropped, older than a period of the schedule (runs at 2026-11-23T02:00:00.000Z and 2026-11-24T02:00:00.000Z since)';

  it('is begun afresh under this run’s key and time, the reason saying what is dropped and why', () => {
    expect(decideOne(aGroup([aSet('2026-11-21T02:00:05.000Z')], { inflight: OLD }))).toEqual({
      action: BACKUP,
      target: 'group acme',
      key: `backup:7:${LATEST_RUN}`,
      reason: `scheduled at ${LATEST_RUN}, last backup 2026-11-21T02:00:05.000Z; begun afresh: ${DROPPED}; ${NEXT}`,
      params: { group_id: 7, group_path: 'acme', taken_at: NOW.toISOString(), key: `backup:7:${LATEST_RUN}` },
      details: [SET_OF_5, 'keeps every set (2 with the new one): no keep rules'],
    });
  });

  it('is begun afresh by a command too', () => {
    expect(decideOne(aGroup([], { inflight: OLD }), { occasion: 'command' })).toMatchObject({
      key: `backup:7:${stampOf(NOW)}`,
      reason: `back up now, as asked (last backup never); begun afresh: ${DROPPED}; ${NEXT}`,
    });
  });

  it('counts from its export when one was requested: an export of the 23rd, after the run before the latest, is carried on', () => {
    const inflight: InflightBackup = {
      ...OLD,
      set: '2026-11-23T090000Z',
      export_requested_at: '2026-11-23T09:00:00.000Z',
    };
    expect(decideOne(aGroup([], { inflight }))).toMatchObject({
      key: OLD.key,
      reason: `carry on the backup begun at ${OLD.taken_at} from the export requested at 2026-11-23T09:00:00.000Z; ${NEXT}`,
    });
  });

  it('names the export request in what is dropped when one was made before the run preceding the latest', () => {
    const inflight: InflightBackup = {
      ...OLD,
      set: '2026-11-22T020031Z',
      export_requested_at: '2026-11-22T02:00:31.000Z',
    };
    expect(decideOne(aGroup([], { inflight })).reason).toBe(
      `scheduled at ${LATEST_RUN}, last backup never; begun afresh: the backup in progress begun at 2026-11-22T02:00:30.000Z (its export was requested at 2026-11-22T02:00:31.000Z) is dropped, older than a period of the schedule (runs at 2026-11-23T02:00:00.000Z and 2026-11-24T02:00:00.000Z since); ${NEXT}`,
    );
  });

  it('is carried on the day after it began (a daemon killed in the night and started in the morning loses nothing)', () => {
    const inflight: InflightBackup = {
      key: 'backup:7:2026-11-23T02:00:00.000Z',
      taken_at: '2026-11-23T02:00:30.000Z',
      set: '2026-11-23T020031Z',
      export_requested_at: '2026-11-23T02:00:31.000Z',
    };
    expect(decideOne(aGroup([], { inflight })).key).toBe(inflight.key);
  });

  it.each<[string, Partial<GroupSnapshot>]>([
    [
      'its prune was cut short',
      { inflight: { ...OLD, set: '2026-11-22T020031Z', export_requested_at: '2026-11-22T02:00:31.000Z', pruning: [] } },
    ],
    [
      'its set is written already',
      {
        inflight: { ...OLD, set: '2026-11-22T020031Z', export_requested_at: '2026-11-22T02:00:31.000Z' },
        inflightArchived: true,
      },
    ],
  ])('is finished however old when %s', (_when, fields) => {
    expect(decideOne(aGroup([], fields)).key).toBe(OLD.key);
  });

  it('is named in a skip, to be dropped at the next backup', () => {
    const decision = decideOne(aGroup([aSet('2026-11-24T02:00:05.000Z')], { inflight: OLD }));
    expect(decision.action).toBe(SKIP);
    expect(decision.details).toEqual([
      'keeps every set (2 with the new one): no keep rules',
      `at the next backup: ${DROPPED}`,
    ]);
  });
});

describe('group_backup decide: sets the manifest lists and the disk does not hold', () => {
  it('names them after the retention preview; they are not counted, so a group whose newest set is gone is backed up again', () => {
    const group = aGroup([aSet('2026-11-23T02:00:05.000Z')], {
      notOnDisk: [
        { set: '2026-11-24T020005Z/', problem: 'its file projects/platform/api.tar.gz is missing from disk' },
        { set: '2026-11-20T020005Z.tar.gz', problem: 'its group archive is 7 bytes on disk, 1024 in the manifest' },
      ],
    });
    expect(decideOne(group, { config: { keep: { last: 2 } } })).toMatchObject({
      action: BACKUP,
      reason: `scheduled at ${LATEST_RUN}, last backup 2026-11-23T02:00:05.000Z; ${NEXT}`,
      details: [
        SET_OF_5,
        'keeps all 2 sets with the new one',
        'listed in the manifest but not counted (its file projects/platform/api.tar.gz is missing from disk): 2026-11-24T020005Z/',
        'listed in the manifest but not counted (its group archive is 7 bytes on disk, 1024 in the manifest): 2026-11-20T020005Z.tar.gz',
      ],
    });
  });
});

describe('group_backup decide: no prune while the history is shorter than the largest keep count', () => {
  it('previews the rules’ prune held back, with why', () => {
    // Three sets of the 23rd and the new one: daily 5 alone would prune the two between the newest and the oldest.
    const sameDay = [
      aSet('2026-11-23T20:00:00.000Z'),
      aSet('2026-11-23T12:00:00.000Z'),
      aSet('2026-11-23T02:00:05.000Z'),
    ];
    expect(decideOne(aGroup(sameDay), { config: { keep: { daily: 5 } } }).details).toEqual([
      SET_OF_5,
      'keeps all 4 sets with the new one',
      'nothing pruned: 4 backups on disk, fewer than 5 (the largest keep count)',
    ]);
  });

  it('holds a partial set back with the rest, since only complete sets are counted', () => {
    const sets = [
      aSet('2026-11-23T20:00:00.000Z'),
      aPartialSet('2026-11-23T16:00:00.000Z'),
      aSet('2026-11-23T12:00:00.000Z'),
      aSet('2026-11-23T02:00:05.000Z'),
    ];
    expect(decideOne(aGroup(sets), { config: { keep: { daily: 5 } } }).details).toEqual([
      SET_OF_5,
      'keeps all 5 sets with the new one',
      'nothing pruned: 4 backups on disk, fewer than 5 (the largest keep count)',
    ]);
  });
});

describe('group_backup: the follow-up of a pass that could not read some groups', () => {
  const snapshot = (unreachable?: number): GroupBackupSnapshot => ({
    groups: [],
    occasion: 'schedule',
    ...(unreachable ? { unreachable } : {}),
  });

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
