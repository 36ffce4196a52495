import type { PolicyType } from '../../engine/policy';
import { groupSelectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import { groupBackupActions } from './group-backup.actions';
import { GROUP_BACKUP_MEASURES } from './group-backup.measures';
import { decideGroupBackups, followUpPass, type GroupBackupSnapshot } from './group-backup.decide';
import { observeGroupBackups } from './group-backup.observer';
import { type GroupBackupConfig, groupBackupPolicy } from './group-backup.schema';

/**
 * The group_backup policy as the engine runs it: on its cron schedule (and at once for `once`), back up each selected
 * group through the forge's export, `concurrency` groups side by side (the forge limits exports per user, and each
 * backup mostly waits for its export to be ready), each a resumable action.
 */
export const groupBackupType: PolicyType<GroupBackupConfig, GroupBackupSnapshot> = {
  definition: groupBackupPolicy,
  trigger: (config) => ({ cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) }),
  observe: observeGroupBackups,
  decide: decideGroupBackups,
  actions: groupBackupActions,
  // Groups the forge did not answer for, while it answered for others, are looked at again before the next night.
  nextPass: followUpPass,
  // Pure, without a clock: what is due is in the pass's own tally of actions.
  summarize: (_config, snapshot) => {
    const resumed = snapshot.groups.filter((group) => group.inflight !== undefined).length;
    return `${count(snapshot.groups.length, 'group')}${resumed > 0 ? `, ${count(resumed, 'backup')} to carry on` : ''}`;
  },
  covered: (_config, snapshot) => (snapshot.covered ? { groups: [...snapshot.covered] } : {}),
  probes: (config) =>
    groupSelectionProbes(config.groups, {
      what: 'group export',
      needs: 'Owner role',
      // The status of the relations export needs the role an export needs, and counts against no export limit.
      read: async (client, group) => {
        await client.groupTransfer.relationsExportStatus(group);
      },
    }),
  // Every group due is backed up in the pass: a backup left for later would be a backup missed.
  limits: (config) => ({ actionsPerPass: Number.MAX_SAFE_INTEGER, sideBySide: config.concurrency }),
  measures: GROUP_BACKUP_MEASURES,
  withFolders: (config, folder) => ({ ...config, destination: folder('destination') }),
};
