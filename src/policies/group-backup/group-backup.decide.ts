import { type Decision, SKIP } from '../../engine/policy';
import { latestRunAtOrBefore, nextRunAfter } from '../../engine/schedule-runs';
import { archiveName, type ManifestEntry, stampOf } from './group-backup.files';
import { planPrune } from './group-backup.retention';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * When a group is backed up: a backup begun and not finished is carried on first, unless it is older than a period of
 * its schedule (see abandonedBecause); otherwise a scheduled pass backs up each group that has no backup on disk since
 * the schedule's latest run, and a command (`once`) backs up every group now. The reasons say when the next scheduled
 * backup is, and the details what the retention rules would prune after it.
 */

export const BACKUP = 'backup';

/** A backup begun and not finished, as the policy keeps it in Redis (see group-backup.actions.ts). */
export interface InflightBackup {
  /** The decision's key: a resumed backup is the same action, for the ledger. */
  readonly key: string;
  /** When the backup began (the decision's time). Its archive is named by its export, not by this. */
  readonly taken_at: string;
  /**
   * When the export was requested, if it was: the archive is named and recorded by this time, which its data is at
   * least as new as.
   */
  readonly export_requested_at?: string;
  readonly relations_requested_at?: string;
  /** When the export's download was last tried (the forge allows one a minute per group, answered or not). */
  readonly last_download_at?: string;
  /** Archives to remove once the new manifest is written: a prune cut short is finished first. */
  readonly pruning?: readonly string[];
}

export interface GroupSnapshot {
  readonly id: number;
  readonly fullPath: string;
  /** What the manifest lists and the disk holds with the recorded sizes, newest first. */
  readonly archives: readonly ManifestEntry[];
  /** What the manifest lists and the disk does not hold as recorded (missing, another size): not counted, and said. */
  readonly notOnDisk?: readonly { readonly file: string; readonly problem: string }[];
  readonly inflight?: InflightBackup;
  /** The backup in progress has its archive in place already (only the manifest and the prune are left). */
  readonly inflightArchived?: boolean;
  /** Archives in the folder the manifest does not list: left alone, and said. */
  readonly unlisted: readonly string[];
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
    const newest = group.archives[0];
    const notes = [
      ...(group.notOnDisk ?? []).map(({ file, problem }) => `listed in the manifest but not counted (${problem}): ${file}`),
      ...group.unlisted.map((name) => `not in the manifest, left alone: ${name}`),
    ];
    const act = (key: string, takenAt: Date, reason: string): Decision => {
      const params: BackupParams = { group_id: group.id, group_path: group.fullPath, taken_at: takenAt.toISOString(), key };
      return { action: BACKUP, target, key, reason, params: { ...params }, details: [...retentionLines(config, group.archives, takenAt), ...notes] };
    };
    const abandoned = group.inflight ? abandonedBecause(config, group.inflight, now, group.inflightArchived === true) : undefined;
    if (group.inflight && abandoned === undefined) {
      const begun = new Date(group.inflight.taken_at);
      const where = group.inflight.pruning ? 'its prune' : group.inflight.export_requested_at ? `the export requested at ${group.inflight.export_requested_at}` : 'the export';
      return act(group.inflight.key, begun, `carry on the backup begun at ${begun.toISOString()} from ${where}; ${next}`);
    }
    // In the reason, so the audit trail has it whatever becomes of the new backup (a refusal's detail is the forge's).
    const dropped = abandoned ? `; begun afresh: ${abandoned}` : '';
    if (snapshot.occasion === 'command') {
      return act(`backup:${group.id}:${stampOf(now)}`, now, `back up now, as asked (last backup ${newest?.taken_at ?? 'never'})${dropped}; ${next}`);
    }
    if (latestRun && (!newest || Date.parse(newest.taken_at) < latestRun.getTime())) {
      return act(
        `backup:${group.id}:${latestRun.toISOString()}`,
        now,
        `scheduled at ${latestRun.toISOString()}, last backup ${newest?.taken_at ?? 'never'}${dropped}; ${next}`,
      );
    }
    const takenNext = nextRun ?? now;
    return {
      action: SKIP,
      target,
      key: `backup:${group.id}`,
      reason: `skip: backed up at ${newest?.taken_at ?? 'never'}${latestRun ? `, after the run scheduled at ${latestRun.toISOString()}` : ''}; ${next}`,
      params: {},
      details: [...retentionLines(config, group.archives, takenNext), ...(abandoned ? [`at the next backup: ${abandoned}`] : []), ...notes],
    };
  });
}

/**
 * Why a backup in progress is not carried on but begun afresh, or undefined when it is carried on: it is older than a
 * period of its schedule, that is its export was requested (before any request: it began) before the run preceding
 * the schedule's latest one, so a whole period from one run to the next has passed since. Carried on, it would
 * download today's data under a key and a reason of days ago (a backup refused on the 27th, carried on on the 29th);
 * begun afresh, it is this run's backup, with this run's key, and a refusal parked on the old key does not hold it.
 * A day later is still carried on: a daemon killed mid-download and started the next morning loses nothing, and the
 * archive is named by its export anyway. A backup whose archive is in place (only its manifest and prune were left)
 * is always finished.
 */
export function abandonedBecause(config: GroupBackupConfig, inflight: InflightBackup, now: Date, archived: boolean): string | undefined {
  if (archived || inflight.pruning) return undefined;
  const schedule = { cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) };
  const latestRun = latestRunAtOrBefore(schedule, now);
  const previousRun = latestRun ? latestRunAtOrBefore(schedule, new Date(latestRun.getTime() - 1)) : undefined;
  const since = inflight.export_requested_at ?? inflight.taken_at;
  if (!latestRun || !previousRun || Date.parse(since) >= previousRun.getTime()) return undefined;
  const what = inflight.export_requested_at ? `its export was requested at ${inflight.export_requested_at}` : 'no export was requested';
  return `the backup in progress begun at ${inflight.taken_at} (${what}) is dropped, older than a period of the schedule (runs at ${previousRun.toISOString()} and ${latestRun.toISOString()} since)`;
}

/** What the retention rules would keep and prune once a backup taken at `takenAt` is in place. */
function retentionLines(config: GroupBackupConfig, archives: readonly ManifestEntry[], takenAt: Date): string[] {
  const newFile = archiveName(stampOf(takenAt));
  const items = [{ name: newFile, takenAt }, ...archives.filter((entry) => entry.file !== newFile).map((entry) => ({ name: entry.file, takenAt: new Date(entry.taken_at) }))];
  if (!config.keep) return [`keeps every backup (${items.length} with the new one): no keep rules`];
  const plan = planPrune(items, config.keep, config.timezone);
  if (plan.held) return [`keeps all ${items.length} backups with the new one`, plan.held];
  if (plan.prune.length === 0) return [items.length === 1 ? 'keeps the new backup, the only one' : `keeps all ${items.length} backups with the new one`];
  const kept = plan.keep.length === 1 ? 'keeps only the new backup' : `keeps ${plan.keep.length} backups with the new one`;
  return [kept, ...plan.prune.map((item) => `would prune ${item.name}`)];
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
