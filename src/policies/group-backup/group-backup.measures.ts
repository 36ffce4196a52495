import type { PolicyMeasure } from '../../engine/policy';

/**
 * What group_backup publishes besides the engine's counts: when each group's last complete set verified and whether
 * a set runs behind its schedule (cluster-wide, so the alerts see one truth), and the bytes each replica wrote.
 */
export const LAST_BACKUP: PolicyMeasure = {
  name: 'backup_last_success_timestamp_seconds',
  help: 'When the last complete backup set of the group verified and was put in place, on any replica (read from Redis); absent until the first. A partial set does not count.',
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

export const BACKUP_SET_BEHIND: PolicyMeasure = {
  name: 'backup_set_behind',
  help: '1 while the backup set of the group in progress cannot finish before the next scheduled one at the forge’s export limit, 0 once it can or is done (read from Redis).',
  kind: 'gauge',
  labels: ['group'],
  clusterWide: true,
  notice: ({ group }) => `the backup set of ${group} cannot finish before the next scheduled one`,
};

export const GROUP_BACKUP_MEASURES: readonly PolicyMeasure[] = [LAST_BACKUP, BACKUP_BYTES, BACKUP_SET_BEHIND];
