import { z } from 'zod';
import { definePolicyType } from '../../config/policy-type';
import { quote } from '../../config/problems';
import { duration, groupSelection, period, projectSelection, re2List } from '../../config/validators';
import { ACCESS_LEVELS, accessLevelName } from '../../gitlab/types/access-levels';
import { USER_STATES } from '../../gitlab/types/common';

/**
 * `access_requests`: approves or denies requests to join groups and projects by ordered rules, failing closed. Field
 * names are snake_case like the forge's own; the rules these fields feed live in access-requests.decide.ts.
 */

/**
 * The levels a rule may grant, by name; `owner` only in groups. 0 (no access) and 5
 * (minimal access) are left out on purpose: approving someone into a group without access is no approval an operator
 * means, and the forge refuses 5 for projects.
 */
const { no_access: _noAccess, minimal_access: _minimalAccess, ...grantLevels } = ACCESS_LEVELS;
export const GRANT_LEVELS: Readonly<typeof grantLevels> = grantLevels;
export type GrantLevel = (typeof GRANT_LEVELS)[keyof typeof GRANT_LEVELS];
export const OWNER: GrantLevel = GRANT_LEVELS.owner;

const LEVEL_HINT =
  'expected an access level: guest, reporter, developer, maintainer or owner (groups only), or 10, 20, 30, 40 or 50';

/** The name of a level (`30` → `developer`), for reasons. */
export function levelName(level: GrantLevel): string {
  return accessLevelName(level) ?? String(level);
}

/** A level a rule may grant (GRANT_LEVELS), by name or number. */
const accessLevel = () =>
  z
    .union([z.enum(Object.keys(GRANT_LEVELS) as [keyof typeof GRANT_LEVELS]), z.number()], { error: LEVEL_HINT })
    .transform((value, ctx): GrantLevel => {
      if (typeof value === 'string') return GRANT_LEVELS[value];
      const level = Object.values(GRANT_LEVELS).find((known) => known === value);
      if (level === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${value} is not an access level a request can be approved at; ${LEVEL_HINT}`,
        });
        return z.NEVER;
      }
      return level;
    });

const DOMAIN = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

/** A mail domain as written after the `@`; matched exactly and case-insensitively, so it is kept in lower case. */
const mailDomain = () =>
  z
    .string({ error: 'expected a mail domain such as acme.com' })
    .transform((text) => text.trim().toLowerCase())
    .refine((domain) => DOMAIN.test(domain), {
      error: (issue) => `expected a mail domain such as acme.com (without "@" or wildcards), got ${quote(issue.input)}`,
    });

const flag = (hint: string) => z.boolean({ error: `expected true or false (${hint})` });

const whenSchema = z
  .strictObject({
    usernames: re2List().optional().describe('RE2 expressions, matched anywhere in the username; one must match.'),
    email_domains: z
      .array(mailDomain(), { error: 'expected a list of mail domains such as [acme.com]' })
      .min(1, { error: 'give at least one domain, or leave the key out' })
      .optional()
      .describe(
        'The domain of the user’s primary email, exactly and in any case (sub.acme.com is not acme.com). Needs an administrator’s token.',
      ),
    two_factor: flag('two-factor authentication on or off')
      .optional()
      .describe('Two-factor authentication on (true) or off (false). Needs an administrator’s token.'),
    external: flag('an external user or not')
      .optional()
      .describe('An external user (true) or not (false). Needs an administrator’s token.'),
    bot: flag('a bot user or not').optional().describe('A bot user (true) or a person (false).'),
    confirmed: flag('email confirmed or not')
      .optional()
      .describe('The account’s email is confirmed (true) or not (false). Needs an administrator’s token.'),
    state: z.enum(USER_STATES, { error: 'expected active or blocked' }).optional().describe('The account’s state.'),
    min_account_age: duration().optional().describe('The account was created at least this long ago.'),
  })
  .describe('Conditions that must all hold; a condition the token cannot see does not hold.');

export type RuleConditions = z.output<typeof whenSchema>;

const ruleSchema = z
  .strictObject({
    approve: accessLevel()
      .optional()
      .describe('Approve at this level (guest, reporter, developer, maintainer, owner for groups, or 10–50).'),
    deny: z
      .literal(true, { error: 'expected true (deny the request); leave the key out otherwise' })
      .optional()
      .describe('Deny the request.'),
    when: whenSchema.optional(),
  })
  .refine((rule) => (rule.approve === undefined) !== (rule.deny === undefined), {
    error: 'a rule is either `approve: <level>` or `deny: true`, exactly one of them',
    when: (payload) => {
      // Only about which keys are present: a mistyped value is reported where it is.
      const input = payload.value as Record<string, unknown> | undefined;
      return (
        typeof input === 'object' && input !== null && (input.approve === undefined) === (input.deny === undefined)
      );
    },
  })
  .describe('Approves or denies when its conditions all hold; the first such rule decides.');

export type Rule = z.output<typeof ruleSchema>;

export const OTHERWISE = ['leave', 'deny'] as const;

const base = definePolicyType(
  'access_requests',
  'Approves or denies requests to join groups and projects by rules, failing closed: it never approves on a guess.',
  {
    groups: groupSelection()
      .optional()
      .describe(
        'Groups whose pending access requests are decided: by id, full path (acme) or glob ("acme/*" its direct subgroups, "acme/**" acme and every subgroup); a quoted leading "!" excludes.',
      ),
    projects: projectSelection()
      .optional()
      .describe(
        'Projects whose pending access requests are decided: by id (42), full path (acme/api) or glob ("acme/*", "acme/**"); a quoted leading "!" excludes.',
      ),
    include_archived: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe(
        'Whether project globs select archived projects too; a project listed by id or path is covered even when archived.',
      ),
    interval: period().describe('How often the pending requests are read.'),
    rules: z
      .array(ruleSchema, {
        error: 'expected a list of rules such as [{ approve: developer, when: { email_domains: [acme.com] } }]',
      })
      .default([])
      .describe('In order: the first rule whose conditions all hold decides. A blocked user is never approved.'),
    otherwise: z
      .enum(OTHERWISE, { error: 'expected leave or deny' })
      .default('leave')
      .describe('What happens to a request no rule decides: leave it to people, or deny it.'),
    deny_pending_after: duration()
      .optional()
      .describe('Deny requests that no rule approved and that have waited longer than this.'),
    max_actions_per_run: z
      .number()
      .int({ error: 'max_actions_per_run must be a whole number' })
      .min(1, { error: 'max_actions_per_run must be at least 1' })
      .default(100)
      .describe('At most this many approvals and denials in one pass; the rest wait for the next.'),
  },
);

type Input = Record<string, unknown> | undefined;

/**
 * The checks that look at more than one field. `when` makes them run even while another field is invalid, so
 * `validate` reports every problem at once; they read only what they check, defensively.
 */
const schema = base.schema
  .refine((policy) => policy.projects !== undefined || policy.groups !== undefined, {
    path: ['groups'],
    error: 'give at least one group or project (groups, projects or both)',
    when: (payload) => {
      const input = payload.value as Input;
      return [input?.projects, input?.groups].every((list) => list === undefined || Array.isArray(list));
    },
  })
  .superRefine(
    (policy, ctx) => {
      // A rule applies to every group and project of the policy; the forge refuses owner (50) for a project.
      if (policy.projects === undefined || !Array.isArray(policy.rules)) return;
      policy.rules.forEach((rule: Rule | undefined, index) => {
        if (rule?.approve !== OWNER) return;
        ctx.addIssue({
          code: 'custom',
          path: ['rules', index, 'approve'],
          message: `rule ${index + 1} approves as owner, which only groups have, but this policy also lists projects; use maintainer or lower, or a separate policy for the groups`,
        });
      });
    },
    { when: (payload) => Array.isArray((payload.value as Input)?.rules) },
  )
  .superRefine(
    (policy, ctx) => {
      if (!Array.isArray(policy.rules)) return;
      policy.rules.forEach((rule: Rule | undefined, index) => {
        // A blocked user is never approved, so such a rule is a mistake, not a policy.
        if (rule?.approve !== undefined && rule.when?.state === 'blocked') {
          ctx.addIssue({
            code: 'custom',
            path: ['rules', index, 'when', 'state'],
            message: `rule ${index + 1} can never approve: a blocked user is never approved`,
          });
        }
      });
    },
    { when: (payload) => Array.isArray((payload.value as Input)?.rules) },
  )
  .refine(
    (policy) => policy.rules.length > 0 || policy.otherwise === 'deny' || policy.deny_pending_after !== undefined,
    {
      path: ['rules'],
      error: 'this policy would never act: give rules, otherwise: deny, or deny_pending_after',
      when: (payload) => {
        const input = payload.value as Input;
        return (
          (input?.rules === undefined || (Array.isArray(input.rules) && input.rules.length === 0)) &&
          input?.otherwise !== 'deny' &&
          input?.deny_pending_after === undefined
        );
      },
    },
  );

export const accessRequestsPolicy = { ...base, schema } as const;

export type AccessRequestsConfig = z.output<typeof schema>;
