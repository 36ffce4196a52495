import { z } from 'zod';
import { ProjectSelection } from '../../config/project-selection';
import { DURATION_HINT, parseDuration } from '../../config/duration';
import { definePolicyType } from '../../config/policy-type';
import { cron, groupRef, projectSelection, re2, re2List, timezone } from '../../config/validators';

/**
 * `registry_cleanup`: deletes container-registry tags on a schedule with the forge's own bulk-deletion rules, so the
 * preview (registry-cleanup.preview.ts) tells exactly what the forge will delete. Field names are the forge's bulk
 * deletion parameters where they exist.
 */

/**
 * The forge's `older_than` interval. The bulk API takes the text itself, so the text is kept as written (trimmed)
 * next to the milliseconds the preview needs.
 */
const olderThan = () =>
  z.string({ error: DURATION_HINT }).transform((text, ctx) => {
    const trimmed = text.trim();
    const ms = /^\d+(s|m|h|d|w|months?)$/.test(trimmed) ? parseDuration(trimmed) : undefined;
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: DURATION_HINT });
      return z.NEVER;
    }
    return { text: trimmed, ms };
  });

export const CLEANUP_MODES = ['bulk', 'per_tag'] as const;

const base = definePolicyType(
  'registry_cleanup',
  'Deletes container-registry tags on a schedule, exactly as the forge’s bulk tag deletion would, within its hourly limit.',
  {
    schedule: cron().describe('When the cleanup runs, as a 5-field cron expression ("0 3 * * *").'),
    timezone: timezone().optional().describe('IANA time zone of the schedule; omitted: UTC.'),
    projects: projectSelection()
      .optional()
      .describe(
        'Projects whose registry repositories are cleaned: by id (42), full path (acme/api) or glob ("acme/**"); a quoted leading "!" excludes.',
      ),
    include_archived: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe('Whether project globs select archived projects too (the forge refuses deleting their tags).'),
    groups: z
      .array(groupRef(), { error: 'expected a list of groups such as [acme]' })
      .optional()
      .describe('Groups whose projects’ registry repositories are cleaned (the group-level repository listing).'),
    repositories: re2List()
      .optional()
      .describe('RE2 expressions on the repository path (acme/api/app), unanchored; one must match. Omitted: all.'),
    name_regex_delete: re2()
      .optional()
      .describe('RE2, anchored by the forge as \\A + pattern + \\z exactly as written: tags to delete.'),
    name_regex: re2()
      .optional()
      .describe('Deprecated synonym of name_regex_delete, accepted as the forge does; name_regex_delete wins.'),
    name_regex_keep: re2()
      .optional()
      .describe(
        'RE2, anchored like name_regex_delete: tags matching it are kept even when the delete expression matches.',
      ),
    keep_n: z
      .number({ error: 'expected a whole number of tags to keep' })
      .int({ error: 'keep_n must be a whole number' })
      .min(0, { error: 'keep_n must be at least 0' })
      .optional()
      .describe('Keep this many of the newest matching tags (by creation time; a tag without one counts as newest).'),
    older_than: olderThan()
      .optional()
      .describe(
        'Delete only tags created strictly before this long ago (1h, 1d, 7d, 2w, 1month); never one without a creation time.',
      ),
    mode: z
      .enum(CLEANUP_MODES, { error: 'expected bulk or per_tag' })
      .default('bulk')
      .describe(
        'bulk: one server-side bulk deletion per repository (at most once an hour); per_tag: the previewed tags one by one.',
      ),
    max_follow_ups: z
      .number()
      .int({ error: 'max_follow_ups must be a whole number' })
      .min(0, { error: 'max_follow_ups must be at least 0' })
      .default(24)
      .describe('In bulk mode, further calls (an hour apart) while tags the rules would delete remain.'),
    delete_empty_repositories: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe('Delete a repository that has no tags left.'),
    max_actions_per_run: z
      .number()
      .int({ error: 'max_actions_per_run must be a whole number' })
      .min(1, { error: 'max_actions_per_run must be at least 1' })
      .default(1000)
      .describe(
        'At most this many deletions (bulk calls, tags or repositories) in one pass; the rest wait for the next.',
      ),
  },
);

/**
 * The checks that look at more than one field. `when` makes them run even while another field is invalid, so
 * `validate` reports every problem at once; they read only the fields they check, defensively.
 */
const schema = base.schema
  .refine((policy) => nonEmpty(policy.projects) || nonEmpty(policy.groups), {
    path: ['projects'],
    error: 'give at least one project or group (projects, groups or both)',
    // Not when either is of the wrong type, nor when projects is an empty list: that is reported where it is.
    when: (payload) => {
      const input = payload.value as Record<string, unknown> | undefined;
      if (Array.isArray(input?.projects) && input.projects.length === 0) return false;
      return [input?.projects, input?.groups].every((list) => list === undefined || Array.isArray(list));
    },
  })
  .refine((policy) => policy.name_regex_delete !== undefined || policy.name_regex !== undefined, {
    path: ['name_regex_delete'],
    error: 'expected the RE2 expression of the tags to delete, such as ".*"',
    when: (payload) => {
      const input = payload.value as Record<string, unknown> | undefined;
      // An invalid expression is reported where it is; "missing" would only add noise.
      return input?.name_regex_delete === undefined && input?.name_regex === undefined;
    },
  });

export const registryCleanupPolicy = { ...base, schema } as const;

export type RegistryCleanupConfig = z.output<typeof schema>;

function nonEmpty(list: readonly unknown[] | ProjectSelection | undefined): boolean {
  // A selection is never empty: its validator asks for at least one item.
  return list instanceof ProjectSelection || (Array.isArray(list) && list.length > 0);
}

/** The delete expression in effect: `name_regex_delete`, else its deprecated synonym, as on the forge. */
export function deletePattern(config: RegistryCleanupConfig): string {
  const pattern = config.name_regex_delete ?? config.name_regex;
  // The schema requires one of them; a config that bypassed it is a bug, never something to send to the forge.
  if (pattern === undefined) throw new TypeError('registry_cleanup: neither name_regex_delete nor name_regex is set');
  return pattern.source;
}
