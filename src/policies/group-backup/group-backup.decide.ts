import { type Decision, SKIP } from '../../engine/policy';
import { latestRunAtOrBefore, nextRunAfter } from '../../engine/schedule-runs';
import { shortestTriggerGapMs } from '../../engine/trigger-period';
import { count } from '../../engine/words';
import { type ListedSet, setLabel, stampOf } from './group-backup.files';
import { planSetPrune } from './group-backup.retention';
import type { SetFile } from './group-backup.set';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * When a group is backed up (a backup set: its group archive and one archive per project): a set begun and not
 * finished is carried on first, unless it is older than a period of its schedule (see abandonedBecause); otherwise a
 * scheduled pass backs up each group that has no set on disk since the schedule's latest run, and a command (`once`)
 * backs up every group now. The details say what the set will hold and how long it takes at the forge's limits, and
 * what the retention rules would prune after it; the reasons when the next scheduled backup is.
 */

export const BACKUP = 'backup';

/** A backup begun and not finished, as the policy keeps it in Redis (see group-backup.inflight.ts). */
export interface InflightBackup {
  /** The decision's key: a resumed backup is the same action, for the ledger. */
  readonly key: string;
  /** When the backup began (the decision's time). Its set is named by its first export request, not by this. */
  readonly taken_at: string;
  /**
   * The set's folder name, once its group export was first requested: the time of that request, which every
   * archive's data in it is at least as new as. It stays when the group export is requested again.
   */
  readonly set?: string;
  /** When the group export was last requested, if it was. */
  readonly export_requested_at?: string;
  readonly relations_requested_at?: string;
  /** When the export's download was last tried (the forge allows one a minute per group, answered or not). */
  readonly last_download_at?: string;
  /** The group archive, once verified and in place (its relations too): the projects come next. */
  readonly group_archive?: SetFile;
  readonly relations?: readonly SetFile[];
  /** Sets to remove (their labels, see setLabel) once the new manifest is written: a prune cut short is finished first. */
  readonly pruning?: readonly string[];
}

export interface GroupSnapshot {
  readonly id: number;
  readonly fullPath: string;
  /** The sets the manifest lists and the disk holds with the recorded sizes, newest first. */
  readonly sets: readonly ListedSet[];
  /** Sets the manifest lists and the disk does not hold as recorded (a file missing, another size): not counted, and said. */
  readonly notOnDisk?: readonly { readonly set: string; readonly problem: string }[];
  readonly inflight?: InflightBackup;
  /** The set in progress is written already (only the manifest and the prune are left). */
  readonly inflightArchived?: boolean;
  /** Sets and archives in the folder the manifest does not list (the set in progress aside): left alone, and said. */
  readonly unlisted: readonly string[];
  /** How many projects the set exports (the group tree's, archived ones when included); absent with `projects: false`. */
  readonly projects?: number;
}

export interface GroupBackupSnapshot {
  readonly groups: readonly GroupSnapshot[];
  readonly occasion: 'schedule' | 'command';
  /** Where globs chose the groups: their paths, for `plan`. */
  readonly covered?: readonly string[];
  /** Groups the forge did not answer for because of itself (5xx, unreachable, 429, 401): a follow-up pass looks again. */
  readonly unreachable?: number;
}

export interface BackupParams {
  readonly group_id: number;
  readonly group_path: string;
  readonly taken_at: string;
  /** The decision's key, kept with the backup in progress. */
  readonly key: string;
}

export function decideGroupBackups(config: GroupBackupConfig, snapshot: GroupBackupSnapshot, now: Date): Decision[] {
  const schedule = { cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) };
  const latestRun = latestRunAtOrBefore(schedule, now);
  const nextRun = nextRunAfter(schedule, now);
  const next = nextRun ? `next scheduled backup ${nextRun.toISOString()}` : 'no further scheduled backup';
  return snapshot.groups.map((group) => {
    const target = `group ${group.fullPath}`;
    // The newest set, complete or not, is this run's: a partial one is not taken again before the next run (it would
    // export every project again for the one that failed); its missing projects are in the manifest and the audit.
    const newest = group.sets[0];
    const last = newest ? `${newest.taken_at}${newest.state === 'partial' ? ' (partial)' : ''}` : 'never';
    const notes = [
      ...(group.notOnDisk ?? []).map(
        ({ set, problem }) => `listed in the manifest but not counted (${problem}): ${set}`,
      ),
      ...group.unlisted.map((name) => `not in the manifest, left alone: ${name}`),
    ];
    const act = (key: string, takenAt: Date, reason: string): Decision => {
      const params: BackupParams = {
        group_id: group.id,
        group_path: group.fullPath,
        taken_at: takenAt.toISOString(),
        key,
      };
      // A set carried on is named already; a new one will be named about now.
      const label =
        group.inflight?.key === key && group.inflight.set ? `${group.inflight.set}/` : `${stampOf(takenAt)}/`;
      return {
        action: BACKUP,
        target,
        key,
        reason,
        params: { ...params },
        details: [...setLines(config, group, now), ...retentionLines(config, group.sets, label, takenAt), ...notes],
      };
    };
    const abandoned = group.inflight
      ? abandonedBecause(config, group.inflight, now, group.inflightArchived === true)
      : undefined;
    if (group.inflight && abandoned === undefined) {
      const begun = new Date(group.inflight.taken_at);
      const where = group.inflight.pruning
        ? 'its prune'
        : group.inflight.export_requested_at
          ? `the export requested at ${group.inflight.export_requested_at}`
          : 'the export';
      return act(
        group.inflight.key,
        begun,
        `carry on the backup begun at ${begun.toISOString()} from ${where}; ${next}`,
      );
    }
    // In the reason, so the audit trail has it whatever becomes of the new backup (a refusal's detail is the forge's).
    const dropped = abandoned ? `; begun afresh: ${abandoned}` : '';
    if (snapshot.occasion === 'command') {
      return act(
        `backup:${group.id}:${stampOf(now)}`,
        now,
        `back up now, as asked (last backup ${last})${dropped}; ${next}`,
      );
    }
    if (latestRun && (!newest || Date.parse(newest.taken_at) < latestRun.getTime())) {
      return act(
        `backup:${group.id}:${latestRun.toISOString()}`,
        now,
        `scheduled at ${latestRun.toISOString()}, last backup ${last}${dropped}; ${next}`,
      );
    }
    const takenNext = nextRun ?? now;
    return {
      action: SKIP,
      target,
      key: `backup:${group.id}`,
      reason: `skip: backed up at ${last}${latestRun ? `, after the run scheduled at ${latestRun.toISOString()}` : ''}; ${next}`,
      params: {},
      details: [
        ...retentionLines(config, group.sets, `${stampOf(takenNext)}/`, takenNext),
        ...(abandoned ? [`at the next backup: ${abandoned}`] : []),
        ...notes,
      ],
    };
  });
}

/**
 * Why a backup in progress is begun afresh rather than carried on, or undefined: it began before the schedule's run
 * preceding the latest one, so a whole period has passed (docs/policies.md, group_backup, "What a set holds").
 */
export function abandonedBecause(
  config: GroupBackupConfig,
  inflight: InflightBackup,
  now: Date,
  archived: boolean,
): string | undefined {
  if (archived || inflight.pruning) return undefined;
  const schedule = { cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) };
  const latestRun = latestRunAtOrBefore(schedule, now);
  const previousRun = latestRun ? latestRunAtOrBefore(schedule, new Date(latestRun.getTime() - 1)) : undefined;
  const since = inflight.export_requested_at ?? inflight.taken_at;
  if (!latestRun || !previousRun || Date.parse(since) >= previousRun.getTime()) return undefined;
  const what = inflight.export_requested_at
    ? `its export was requested at ${inflight.export_requested_at}`
    : 'no export was requested';
  return `the backup in progress begun at ${inflight.taken_at} (${what}) is dropped, older than a period of the schedule (runs at ${previousRun.toISOString()} and ${latestRun.toISOString()} since)`;
}

/**
 * How long a set of `projects` projects takes at the forge's limit of `perMinute` project exports a minute: the
 * requests paced over ⌈projects / perMinute⌉ minutes, and about a minute more for the last ones to be prepared and
 * downloaded (500 projects at 6 a minute: 85 minutes). The group export runs alongside. Pure.
 */
export function setDurationMs(projects: number, perMinute: number): number {
  return projects === 0 ? 60_000 : (Math.ceil(projects / perMinute) + 1) * 60_000;
}

/** What the set will hold, how long it takes at the forge's limits, and a warning when that is longer than the schedule's period. */
function setLines(config: GroupBackupConfig, group: GroupSnapshot, now: Date): string[] {
  if (group.projects === undefined) return ['the set: the group archive alone (projects: false)'];
  const duration = setDurationMs(group.projects, config.project_exports_per_minute);
  const lines = [
    `the set: the group archive and ${count(group.projects, 'project')}, about ${minutes(duration)} at ${config.project_exports_per_minute} project exports a minute`,
  ];
  // The shortest gap between two runs is the one a set can run into (`0 2,3 * * *`: an hour, not a day).
  const gap = shortestTriggerGapMs(
    { cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) },
    now,
  );
  if (gap > 0 && duration > gap) {
    lines.push(
      `warning: the set takes longer than the schedule's period (${minutes(gap)} between runs): a set still running when the next is due is carried on, and the next begins after it`,
    );
  }
  return lines;
}

function minutes(ms: number): string {
  const total = Math.round(ms / 60_000);
  return total < 120 ? `${total} min` : `${Math.floor(total / 60)} h ${total % 60} min`;
}

/** What the retention rules would keep and prune once the set `newLabel`, taken at `takenAt`, is in place, complete. */
function retentionLines(
  config: GroupBackupConfig,
  sets: readonly ListedSet[],
  newLabel: string,
  takenAt: Date,
): string[] {
  const items = [
    { name: newLabel, takenAt, state: 'complete' as const },
    ...sets
      .filter((set) => setLabel(set) !== newLabel)
      .map((set) => ({ name: setLabel(set), takenAt: new Date(set.taken_at), state: set.state })),
  ];
  const completes = items.filter((item) => item.state === 'complete').length;
  if (!config.keep) return [`keeps every set (${items.length} with the new one): no keep rules`];
  const plan = planSetPrune(items, config.keep, config.timezone);
  if (plan.held) return [`keeps all ${items.length} sets with the new one`, plan.held];
  if (plan.prune.length === 0)
    return [items.length === 1 ? 'keeps the new set, the only one' : `keeps all ${items.length} sets with the new one`];
  const kept =
    plan.keep.length === 1
      ? 'keeps only the new set'
      : `keeps ${plan.keep.length} sets with the new one (${count(completes, 'complete set')} counted)`;
  return [
    kept,
    ...plan.prune.map(
      (item) => `would prune ${item.name}${item.state === 'partial' ? ' (partial, a newer set is complete)' : ''}`,
    ),
    'if the new set ends partial, nothing is pruned',
  ];
}

/** The first follow-up after a scheduled run, when some groups could not be read; each later one twice as far from it. */
export const FOLLOW_UP_FIRST_MS = 300_000;

/**
 * When to look again at groups the forge did not answer for while it answered for others (a pass that could read
 * none fails as a whole, and the engine tries it again): 5, 10, 20, 40 minutes… after the schedule's latest run,
 * the first such time still ahead, as long as it comes before the next run. Counted from the run, not from the
 * pass, so that a group the forge fails for all day is looked at a few times, not every 5 minutes. Pure.
 */
export function followUpPass(config: GroupBackupConfig, snapshot: GroupBackupSnapshot, now: Date): Date | undefined {
  if (!snapshot.unreachable) return undefined;
  const schedule = { cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) };
  const latestRun = latestRunAtOrBefore(schedule, now);
  const nextRun = nextRunAfter(schedule, now);
  if (!latestRun) return undefined;
  let at = latestRun.getTime() + FOLLOW_UP_FIRST_MS;
  for (let step = FOLLOW_UP_FIRST_MS; at <= now.getTime(); step *= 2) at += step;
  return nextRun && at >= nextRun.getTime() ? undefined : new Date(at);
}
