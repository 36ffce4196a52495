import { type Decision, SKIP } from '../../engine/policy';
import { latestRunAtOrBefore, nextRunAfter } from '../../engine/schedule-runs';
import { archiveName, type ManifestEntry, stampOf } from './group-backup.files';
import { planRetention } from './group-backup.retention';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * When a group is backed up: a backup begun and not finished is carried on first; otherwise a scheduled pass backs up
 * each group that has no backup since the schedule's latest run, and a command (`once`) backs up every group now. The
 * reasons say when the next scheduled backup is, and the details what the retention rules would prune after it.
 */

export const BACKUP = 'backup';

/** A backup begun and not finished, as the policy keeps it in Redis (see group-backup.actions.ts). */
export interface InflightBackup {
  /** The decision's key: a resumed backup is the same action, for the ledger. */
  readonly key: string;
  readonly taken_at: string;
  /** When the export was requested, if it was. */
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
  /** What the manifest lists, newest first. */
  readonly archives: readonly ManifestEntry[];
  readonly inflight?: InflightBackup;
  /** Archives in the folder the manifest does not list: left alone, and said. */
  readonly unlisted: readonly string[];
}

export interface GroupBackupSnapshot {
  readonly groups: readonly GroupSnapshot[];
  readonly occasion: 'schedule' | 'command';
  /** Where globs chose the groups: their paths, for `plan`. */
  readonly covered?: readonly string[];
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
    const unlisted = group.unlisted.map((name) => `not in the manifest, left alone: ${name}`);
    const act = (key: string, takenAt: Date, reason: string): Decision => {
      const params: BackupParams = { group_id: group.id, group_path: group.fullPath, taken_at: takenAt.toISOString(), key };
      return { action: BACKUP, target, key, reason, params: { ...params }, details: [...retentionLines(config, group.archives, takenAt), ...unlisted] };
    };
    if (group.inflight) {
      const begun = new Date(group.inflight.taken_at);
      const where = group.inflight.pruning ? 'its prune' : group.inflight.export_requested_at ? `the export requested at ${group.inflight.export_requested_at}` : 'the export';
      return act(group.inflight.key, begun, `carry on the backup begun at ${begun.toISOString()} from ${where}; ${next}`);
    }
    if (snapshot.occasion === 'command') {
      return act(`backup:${group.id}:${stampOf(now)}`, now, `back up now, as asked (last backup ${newest?.taken_at ?? 'never'}); ${next}`);
    }
    if (latestRun && (!newest || Date.parse(newest.taken_at) < latestRun.getTime())) {
      return act(
        `backup:${group.id}:${latestRun.toISOString()}`,
        now,
        `scheduled at ${latestRun.toISOString()}, last backup ${newest?.taken_at ?? 'never'}; ${next}`,
      );
    }
    const takenNext = nextRun ?? now;
    return {
      action: SKIP,
      target,
      key: `backup:${group.id}`,
      reason: `skip: backed up at ${newest?.taken_at ?? 'never'}${latestRun ? `, after the run scheduled at ${latestRun.toISOString()}` : ''}; ${next}`,
      params: {},
      details: [...retentionLines(config, group.archives, takenNext), ...unlisted],
    };
  });
}

/** What the retention rules would keep and prune once a backup taken at `takenAt` is in place. */
function retentionLines(config: GroupBackupConfig, archives: readonly ManifestEntry[], takenAt: Date): string[] {
  const newFile = archiveName(stampOf(takenAt));
  const items = [{ name: newFile, takenAt }, ...archives.filter((entry) => entry.file !== newFile).map((entry) => ({ name: entry.file, takenAt: new Date(entry.taken_at) }))];
  if (!config.keep) return [`keeps every backup (${items.length} with the new one): no keep rules`];
  const plan = planRetention(items, config.keep, config.timezone);
  if (plan.prune.length === 0) return [items.length === 1 ? 'keeps the new backup, the only one' : `keeps all ${items.length} backups with the new one`];
  const kept = plan.keep.length === 1 ? 'keeps only the new backup' : `keeps ${plan.keep.length} backups with the new one`;
  return [kept, ...plan.prune.map((item) => `would prune ${item.name}`)];
}
