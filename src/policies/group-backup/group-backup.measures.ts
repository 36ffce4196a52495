import type { PolicyMeasure } from '../../engine/policy';

/**
 * What group_backup publishes besides the engine's counts: when each group's last backup verified (cluster-wide, so
 * the alert for a group without a backup sees one truth), and the bytes each replica wrote.
 */
export const LAST_BACKUP: PolicyMeasure = {
  name: 'backup_last_success_timestamp_seconds',
  help: 'When the last backup of the group verified and was put in place, on any replica (read from Redis); absent until the first.',
  kind: 'gauge',
  labels: ['group'],
  clusterWide: true,
};

export const BACKUP_BYTES: PolicyMeasure = {
  name: 'backup_bytes_written_total',
  help: 'Bytes of verified backups written (archives and relations files), by policy and group.',
  kind: 'counter',
  labels: ['group'],
};

export const GROUP_BACKUP_MEASURES: readonly PolicyMeasure[] = [LAST_BACKUP, BACKUP_BYTES];
