import { resolve } from 'node:path';
import { z } from 'zod';
import { definePolicyType } from '../../config/policy-type';
import { cron, duration, groupSelection, timezone } from '../../config/validators';

/**
 * `group_backup`: exports groups on a schedule through the forge's group export (spec 01 §4), keeps each archive
 * verified under `destination/GROUP_PATH/` with a manifest, and prunes old ones by restic-style `keep` rules.
 */

const keepCount = (what: string) =>
  z
    .number({ error: `expected a whole number of ${what} backups to keep` })
    .int({ error: `expected a whole number of ${what} backups to keep` })
    .min(0, { error: 'expected 0 or more' })
    .optional();

const keepSchema = z
  .strictObject({
    last: keepCount('latest').describe('Keep the newest N backups.'),
    daily: keepCount('daily').describe('Keep the newest backup of each of the last N days that have one.'),
    weekly: keepCount('weekly').describe('Keep the newest backup of each of the last N ISO weeks that have one.'),
    monthly: keepCount('monthly').describe('Keep the newest backup of each of the last N months that have one.'),
  })
  .refine((keep) => Object.values(keep).some((value) => value !== undefined), {
    error: 'give at least one of last, daily, weekly, monthly (or leave keep out to keep every backup)',
  });

export const groupBackupPolicy = definePolicyType(
  'group_backup',
  'Backs up groups on a schedule through the forge’s group export: verified archives, a manifest with checksums, and restic-style retention.',
  {
    groups: groupSelection().describe(
      'Groups to back up: by id, full path (acme) or glob ("acme/*" its direct subgroups, "acme/**" acme and every subgroup); a quoted leading "!" excludes. Each group’s archive holds its subgroups too.',
    ),
    schedule: cron().describe('When backups are taken, as a 5-field cron expression ("0 2 * * *"). `once` backs up at once, whatever the schedule.'),
    timezone: timezone().optional().describe('IANA time zone of the schedule and of the days, weeks and months of `keep`; omitted: UTC.'),
    destination: z
      .string({ error: 'expected the folder the archives are written to' })
      .min(1, { error: 'expected the folder the archives are written to' })
      // Resolved once, when loading: a path relative to wherever the daemon happened to start is a surprise later.
      .transform((path) => resolve(path))
      .describe('Folder of the backups: GROUP_PATH/YYYY-MM-DDTHHMMSSZ.tar.gz and GROUP_PATH/manifest.json. Created when missing.'),
    keep: keepSchema
      .optional()
      .describe('Retention, as restic’s forget: { last, daily, weekly, monthly }. Applied only after a new backup verified. Omitted: every backup is kept.'),
    relations: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe('Also download the relations export (one gzip NDJSON file per relation, for migration) beside each archive.'),
    timeout: duration({ min: 60_000 })
      .prefault('1h')
      .describe('How long an export may take to be ready for download; then the backup fails and is tried again.'),
    concurrency: z
      .number({ error: 'expected a whole number of groups from 1 to 6' })
      .int({ error: 'expected a whole number of groups from 1 to 6' })
      .min(1, { error: 'expected at least 1' })
      .max(6, { error: 'expected at most 6: the forge takes 6 group exports a minute per user, so more side by side only meet its limit' })
      .default(3)
      .describe('How many groups are backed up side by side (each mostly waits for the forge to prepare its export). At most 6: the forge takes 6 group exports a minute per user, and an export over that is refused with a wait the client keeps.'),
    download_interval: duration({ min: 1_000 })
      .prefault('1m')
      .describe('Time between two tries to download a group’s export while the forge prepares it (the forge allows one download per group a minute).'),
  },
);

export type GroupBackupConfig = z.output<typeof groupBackupPolicy.schema>;
export type RetentionConfig = NonNullable<GroupBackupConfig['keep']>;
