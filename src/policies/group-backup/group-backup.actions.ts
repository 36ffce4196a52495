import { z } from 'zod';
import { configOf, defineAction, param, readParams } from '../../engine/action-params';
import type { PolicyAction } from '../../engine/policy';
import { Backup } from './group-backup.backup';
import { readInflight } from './group-backup.observer';
import { type GroupBackupConfig, groupBackupPolicy } from './group-backup.schema';

const backupParams = z.object({
  group_id: param.integer(),
  group_path: param.text(),
  taken_at: param.text(),
  key: param.text(),
});

/** One backup set of one group (group-backup.backup.ts), resumable: a pass after a crash carries the same set on. */
const backup = defineAction({
  read: (params) => readParams(groupBackupPolicy.type, backupParams, params),
  unchecked:
    'it adds a backup set and removes nothing on the forge; its prune removes sets only after reading again, at that moment, that every set it keeps is on disk with its recorded sizes and SHA-256s (see group-backup.prune.ts)',
  run: async (params, context) => {
    // Where the backups go and how long to wait live in the file, as it says now; the params name the group only.
    const config = configOf<GroupBackupConfig>(context, groupBackupPolicy);
    return new Backup(config, params, context, await readInflight(context, params.group_id)).run();
  },
});

export const groupBackupActions: Readonly<Record<string, PolicyAction>> = { backup };
