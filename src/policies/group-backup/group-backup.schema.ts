import { resolve } from 'node:path';
import { z } from 'zod';
import { definePolicyType } from '../../config/policy-type';
import { cron, duration, groupSelection, timezone } from '../../config/validators';

/**
 * `group_backup`: backs up groups on a schedule as backup sets, the forge's group export and one
 * project export per project of the group tree, each verified, under `destination/GROUP_PATH/STAMP/` with a
 * manifest; old sets are pruned by restic-style `keep` rules that count complete sets.
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
  'Backs up groups and every project of their trees on a schedule through the forge’s exports: verified backup sets, a manifest with checksums, and restic-style retention of complete sets.',
  {
    groups: groupSelection().describe(
      'Groups to back up: by id, full path (acme) or glob ("acme/*" its direct subgroups, "acme/**" acme and every subgroup); a quoted leading "!" excludes. Each group’s set holds its subgroups and their projects too.',
    ),
    schedule: cron().describe(
      'When backups are taken, as a 5-field cron expression ("0 2 * * *"). `once` backs up at once, whatever the schedule.',
    ),
    timezone: timezone()
      .optional()
      .describe('IANA time zone of the schedule and of the days, weeks and months of `keep`; omitted: UTC.'),
    destination: z
      .string({ error: 'expected the folder the archives are written to' })
      .min(1, { error: 'expected the folder the archives are written to' })
      // Resolved once, when loading: a path relative to wherever the daemon happened to start is a surprise later.
      .transform((path) => resolve(path))
      .describe(
        'Folder of the backups: a set per run in GROUP_PATH/YYYY-MM-DDTHHMMSSZ/ (group.tar.gz, projects/PATH.tar.gz, set.json) and GROUP_PATH/manifest.json. Created when missing.',
      ),
    keep: keepSchema
      .optional()
      .describe(
        'Retention, as restic’s forget: { last, daily, weekly, monthly }, counting complete sets; a partial set is kept until a newer complete one exists. Applied only after a new complete set verified. Omitted: every set is kept.',
      ),
    projects: z
      .boolean({ error: 'expected true or false' })
      .default(true)
      .describe(
        'Export every project of the group and its subgroups into the set (the group export holds none). false: the group archive alone.',
      ),
    include_archived: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe('Whether archived projects are exported into the set too.'),
    project_exports_per_minute: z
      .number({ error: 'expected a whole number of project exports a minute' })
      .int({ error: 'expected a whole number of project exports a minute' })
      .min(1, { error: 'expected at least 1' })
      .max(600, { error: 'expected at most 600' })
      .default(6)
      .describe(
        'How many project exports are requested a minute, across every replica and policy of this token: the forge’s project_export_limit, 6 unless its administrator changed it. A set of N projects takes about N / this minutes.',
      ),
    relations: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe(
        'Also download the relations export (one gzip NDJSON file per relation, for migration) beside each archive.',
      ),
    timeout: duration({ min: 60_000 })
      .prefault('1h')
      .describe(
        'How long an export may take to be ready for download; then it is requested again (a project’s up to 3 times, then the set goes on without it).',
      ),
    concurrency: z
      .number({ error: 'expected a whole number of groups from 1 to 6' })
      .int({ error: 'expected a whole number of groups from 1 to 6' })
      .min(1, { error: 'expected at least 1' })
      .max(6, {
        error:
          'expected at most 6: the forge takes 6 group exports a minute per user, so more side by side only meet its limit',
      })
      .default(3)
      .describe(
        'How many groups are backed up side by side (each mostly waits for the forge to prepare its export). At most 6: the forge takes 6 group exports a minute per user, and an export over that is refused with a wait the client keeps.',
      ),
    download_interval: duration({ min: 1_000 })
      .prefault('1m')
      .describe(
        'Time between two looks at an export the forge is preparing: a try to download the group’s (the forge allows one download per group a minute), a status read of a project’s.',
      ),
  },
);

export type GroupBackupConfig = z.output<typeof groupBackupPolicy.schema>;
export type RetentionConfig = NonNullable<GroupBackupConfig['keep']>;
