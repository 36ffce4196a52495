import { z } from 'zod';
import {
  PROTECTED_BRANCH_ACCESS_LEVEL_NAMES,
  PROTECTED_BRANCH_ACCESS_LEVEL_VALUES,
  PROTECTED_BRANCH_ACCESS_LEVELS,
  protectedBranchAccessLevelName,
  type ProtectedBranchAccessLevel,
} from '../../../gitlab/types/protected-branches';
import { flag, got, uniqueNames, WHEN_A_LIST } from '../project-settings.fields';

/** `protected_branches:` of a project_settings policy. */

const LEVEL_HINT = 'expected an access level: no_access, developer, maintainer or admin, or 0, 30, 40 or 60';

/** The name of a level (`40` → `maintainer`), for reasons. */
export function branchLevelName(level: number): string {
  return protectedBranchAccessLevelName(level) ?? String(level);
}

/** A protected branch access level by name or number, as the forge's Protected branches API page lists them. */
const accessLevel = () =>
  z
    .union([z.enum(PROTECTED_BRANCH_ACCESS_LEVEL_NAMES), z.number()], {
      error: (issue) => `${LEVEL_HINT}${got(issue.input)}`,
    })
    .transform((value, ctx): ProtectedBranchAccessLevel => {
      if (typeof value === 'string') return PROTECTED_BRANCH_ACCESS_LEVELS[value];
      const level = PROTECTED_BRANCH_ACCESS_LEVEL_VALUES.find((known) => known === value);
      if (level === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${value} is not an access level of a protected branch; ${LEVEL_HINT}`,
        });
        return z.NEVER;
      }
      return level;
    });

/**
 * Whether `name` can be a branch name or a wildcard over them (git check-ref-format, with `*` allowed): the forge
 * would refuse any other, and a typo caught here is better than a failed action every pass.
 */
function isBranchPattern(name: string): boolean {
  if (name === '' || name === '@' || name.startsWith('-') || name.startsWith('/')) return false;
  if (name.endsWith('/') || name.endsWith('.') || name.endsWith('.lock')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{')) return false;
  return !/[\s\x00-\x1f\x7f~^:?[\\]/.test(name);
}

const BRANCH_HINT = 'expected a branch name or a wildcard such as "release/*"';

const branchName = () =>
  z.string({ error: (issue) => `${BRANCH_HINT}${got(issue.input)}` }).refine(isBranchPattern, {
    error: (issue) => `${BRANCH_HINT} (no spaces, "..", "~^:?[\\", not ending in "/" or ".lock")${got(issue.input)}`,
  });

const protectedBranchSchema = z
  .strictObject({
    name: branchName().describe(
      'The branch name, or a wildcard such as "release/*" (a protection of its own, by that name).',
    ),
    push_access_level: accessLevel().describe(
      'Who may push: no_access, developer, maintainer or admin (or 0, 30, 40, 60).',
    ),
    merge_access_level: accessLevel().describe(
      'Who may merge: no_access, developer, maintainer or admin (or 0, 30, 40, 60).',
    ),
    unprotect_access_level: accessLevel()
      .optional()
      .describe(
        'Who may unprotect: no_access, developer, maintainer or admin (or 0, 30, 40, 60). Omitted: left as the forge has it.',
      ),
    allow_force_push: flag().default(false).describe('Whether force pushes are allowed.'),
    code_owner_approval_required: flag()
      .optional()
      .describe(
        'Whether pushes need code owner approval (higher tier; a forge without it is reported, not failed). Omitted: left as it is.',
      ),
  })
  .describe('One protected branch (or wildcard) and its access levels.');

export type DeclaredProtectedBranch = z.output<typeof protectedBranchSchema>;

export const protectedBranchesSchema = z
  .array(protectedBranchSchema, {
    error:
      'expected a list of branches such as [{ name: main, push_access_level: maintainer, merge_access_level: developer }]',
  })
  .min(1, { error: 'give at least one branch, or leave the key out' })
  .superRefine(uniqueNames('branch name', 'protected_branches'), WHEN_A_LIST)
  .optional()
  .describe('Protected branches and wildcards held to these levels; with prune, protections not listed are removed.');
