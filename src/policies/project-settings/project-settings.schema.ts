import { z } from 'zod';
import { definePolicyType } from '../../config/policy-type';
import { quote } from '../../config/problems';
import { period, projectSelection } from '../../config/validators';
import type { EditProjectApprovalSettingsParams } from '../../gitlab/types/approvals';
import {
  INTEGRATION_PARAMETERS,
  INTEGRATION_SLUGS,
  type IntegrationParameter,
  type IntegrationParamsBySlug,
  type IntegrationSlug,
} from '../../gitlab/types/integrations';
import {
  PROTECTED_BRANCH_ACCESS_LEVEL_NAMES,
  PROTECTED_BRANCH_ACCESS_LEVEL_VALUES,
  PROTECTED_BRANCH_ACCESS_LEVELS,
  protectedBranchAccessLevelName,
  type ProtectedBranchAccessLevel,
} from '../../gitlab/types/protected-branches';

/**
 * `project_settings`: holds protected branches, merge request approval settings and rules, and integrations of the
 * selected projects to a declared state (issue 17). Keys are snake_case like the forge's own parameters; the rules
 * these fields feed live in project-settings.decide.ts.
 */

const LEVEL_HINT = 'expected an access level: no_access, developer, maintainer or admin, or 0, 30, 40 or 60';

/**
 * `, got …` for a message: what the operator wrote, strings quoted, numbers and booleans as written, a list or a
 * mapping by its kind; nothing when the key is missing (the loader then says "missing").
 */
function got(input: unknown): string {
  if (input === undefined) return '';
  if (typeof input === 'string') return `, got ${quote(input)}`;
  if (Array.isArray(input)) return ', got a list';
  if (typeof input === 'object' && input !== null) return ', got a mapping';
  return `, got ${typeof input === 'number' || typeof input === 'boolean' || input === null ? String(input) : typeof input}`;
}

/** The name of a level (`40` → `maintainer`), for reasons. */
export function branchLevelName(level: number): string {
  return protectedBranchAccessLevelName(level) ?? String(level);
}

/** A protected branch access level by name or number (spec 02 §2 "Protected branch"); yields the number. */
const accessLevel = () =>
  z
    .union([z.enum(PROTECTED_BRANCH_ACCESS_LEVEL_NAMES), z.number()], { error: (issue) => `${LEVEL_HINT}${got(issue.input)}` })
    .transform((value, ctx): ProtectedBranchAccessLevel => {
      if (typeof value === 'string') return PROTECTED_BRANCH_ACCESS_LEVELS[value];
      const level = PROTECTED_BRANCH_ACCESS_LEVEL_VALUES.find((known) => known === value);
      if (level === undefined) {
        ctx.addIssue({ code: 'custom', message: `${value} is not an access level of a protected branch; ${LEVEL_HINT}` });
        return z.NEVER;
      }
      return level;
    });

const flag = () => z.boolean({ error: (issue) => `expected true or false${got(issue.input)}` });

/**
 * Whether `name` can be a branch name or a wildcard over them (git check-ref-format, with `*` allowed): no spaces,
 * control characters, `~ ^ : ? [ \`, `..`, `//` or `@{`; not starting with `-` or `/`, not ending with `/`, `.` or
 * `.lock`. The forge would refuse such a name, and a typo caught here is better than a failed action every pass.
 */
function isBranchPattern(name: string): boolean {
  if (name === '' || name === '@' || name.startsWith('-') || name.startsWith('/')) return false;
  if (name.endsWith('/') || name.endsWith('.') || name.endsWith('.lock')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{')) return false;
  return !/[\s\x00-\x1f\x7f~^:?[\\]/.test(name);
}

const BRANCH_HINT = 'expected a branch name or a wildcard such as "release/*"';

const branchName = () =>
  z
    .string({ error: (issue) => `${BRANCH_HINT}${got(issue.input)}` })
    .refine(isBranchPattern, { error: (issue) => `${BRANCH_HINT} (no spaces, "..", "~^:?[\\", not ending in "/" or ".lock")${got(issue.input)}` });

const protectedBranchSchema = z
  .strictObject({
    name: branchName().describe('The branch name, or a wildcard such as "release/*" (a protection of its own, by that name).'),
    push_access_level: accessLevel().describe('Who may push: no_access, developer, maintainer or admin (or 0, 30, 40, 60).'),
    merge_access_level: accessLevel().describe('Who may merge: no_access, developer, maintainer or admin (or 0, 30, 40, 60).'),
    unprotect_access_level: accessLevel()
      .optional()
      .describe('Who may unprotect: no_access, developer, maintainer or admin (or 0, 30, 40, 60). Omitted: left as the forge has it.'),
    allow_force_push: flag().default(false).describe('Whether force pushes are allowed.'),
    code_owner_approval_required: flag()
      .optional()
      .describe('Whether pushes need code owner approval (higher tier; a forge without it is reported, not failed). Omitted: left as it is.'),
  })
  .describe('One protected branch (or wildcard) and its access levels.');

export type DeclaredProtectedBranch = z.output<typeof protectedBranchSchema>;

/**
 * A check that names are unique in a list, each duplicate reported at its own `name` as the policy list's duplicate
 * names are. It reads the raw items defensively: `when` runs it while another item is invalid, so `validate` reports
 * every problem at once.
 */
function uniqueNames(what: string, listKey: string) {
  return (items: readonly unknown[], ctx: z.RefinementCtx): void => {
    const first = new Map<string, number>();
    items.forEach((item, index) => {
      const name = typeof item === 'object' && item !== null ? (item as Record<string, unknown>).name : undefined;
      if (typeof name !== 'string') return;
      const seen = first.get(name);
      if (seen === undefined) first.set(name, index);
      else ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate ${what} ${quote(name)} (${listKey}[${seen}] has it already); declare each once` });
    });
  };
}

const WHEN_A_LIST = { when: (payload: { value: unknown }) => Array.isArray(payload.value) };

const approvalSettingsSchema = z
  .strictObject({
    approvals_before_merge: z
      .number({ error: (issue) => `expected a whole number of approvals${got(issue.input)}` })
      .int({ error: 'expected a whole number of approvals' })
      .min(0, { error: 'expected 0 or more approvals' })
      .optional()
      .describe('Deprecated by the forge in favour of approval rules.'),
    reset_approvals_on_push: flag().optional().describe('Whether a push removes the approvals given.'),
    disable_overriding_approvers_per_merge_request: flag().optional().describe('Whether merge requests may not change their approvers.'),
    merge_requests_author_approval: flag().optional().describe('Whether authors may approve their own merge requests.'),
    merge_requests_disable_committers_approval: flag().optional().describe('Whether committers may not approve merge requests they committed to.'),
    require_password_to_approve: flag().optional().describe('Whether approving asks for the approver’s password.'),
  })
  .describe('Project approval settings (higher tier); only the settings given are held, the others left alone.');

/** The settings keys are exactly the forge's (spec 02 §4 `POST /projects/:id/approvals`). */
type _SettingsMatchTheForge = [keyof z.output<typeof approvalSettingsSchema>] extends [keyof EditProjectApprovalSettingsParams]
  ? [keyof EditProjectApprovalSettingsParams] extends [keyof z.output<typeof approvalSettingsSchema>]
    ? true
    : never
  : never;
const _settingsMatchTheForge: _SettingsMatchTheForge = true;
void _settingsMatchTheForge;

const ids = (what: 'user' | 'group') =>
  z
    .array(
      z
        .number({ error: (issue) => `expected a ${what} id (a positive whole number)${got(issue.input)}` })
        .int({ error: `expected a ${what} id (a positive whole number)` })
        .positive({ error: `expected a ${what} id (a positive whole number)` }),
      { error: `expected a list of ${what} ids such as [42]` },
    )
    .optional();

const approvalRuleSchema = z
  .strictObject({
    name: z
      .string({ error: (issue) => `expected the rule’s name${got(issue.input)}` })
      .trim()
      .min(1, { error: 'expected the rule’s name, not an empty string' })
      .describe('The rule’s name: how the rule is found on the forge.'),
    approvals_required: z
      .number({ error: (issue) => `expected a whole number of approvals (0 or more)${got(issue.input)}` })
      .int({ error: (issue) => `expected a whole number of approvals (0 or more)${got(issue.input)}` })
      .min(0, { error: (issue) => `expected a whole number of approvals (0 or more)${got(issue.input)}` })
      .describe('How many approvals the rule needs.'),
    user_ids: ids('user').describe('The users who may approve under the rule, by id. Omitted: left as they are.'),
    group_ids: ids('group').describe('The groups whose members may approve under the rule, by id. Omitted: left as they are.'),
  })
  .describe('A merge request approval rule of the project, found by name.');

export type DeclaredApprovalRule = z.output<typeof approvalRuleSchema>;

const approvalsSchema = z
  .strictObject({
    settings: approvalSettingsSchema.optional(),
    rules: z
      .array(approvalRuleSchema, { error: 'expected a list of rules such as [{ name: security, approvals_required: 1, group_ids: [42] }]' })
      .min(1, { error: 'give at least one rule, or leave the key out' })
      .superRefine(uniqueNames('approval rule name', 'rules'), WHEN_A_LIST)
      .optional()
      .describe('Approval rules held by name; with prune, user-defined rules not listed are deleted (never the system rules).'),
  })
  .refine((approvals) => approvals.settings !== undefined || approvals.rules !== undefined, {
    error: 'give settings, rules or both, or leave approvals out',
    when: (payload) => {
      const input = payload.value as Record<string, unknown> | undefined;
      return typeof input === 'object' && input !== null && input.settings === undefined && input.rules === undefined;
    },
  })
  .describe('Merge request approvals (higher tier).');

/** `, got …` for an integration parameter: a secret is never shown, however wrong it is. */
function gotParameter(parameter: IntegrationParameter, input: unknown): string {
  return parameter.secret ? ', got something else (a secret: not shown)' : got(input);
}

function isHttpUrl(text: string): boolean {
  try {
    const parsed = new URL(text);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * One integration parameter, by its entry in the client's table. A required one left out is reported as missing
 * with the slug and parameter; a wrong value says what was expected and, unless the parameter is a secret, what was
 * found.
 */
function integrationParameter(slug: IntegrationSlug, name: string, parameter: IntegrationParameter): z.ZodType<string | number | boolean | undefined> {
  const expected = (what: string) => (issue: { input: unknown }) =>
    issue.input === undefined ? `${slug} requires ${name} (${what})` : `expected ${what}${gotParameter(parameter, issue.input)}`;
  let schema: z.ZodType<string | number | boolean>;
  switch (parameter.kind) {
    case 'boolean':
      schema = z.boolean({ error: expected('true or false') });
      break;
    case 'integer':
      schema = z.number({ error: expected('a whole number') }).int({ error: (issue) => `expected a whole number${gotParameter(parameter, issue.input)}` });
      break;
    case 'enum': {
      const values = parameter.values ?? [];
      schema = z.enum(values as [string, ...string[]], { error: expected(`one of ${values.join(', ')}`) });
      break;
    }
    case 'url':
      schema = z
        .string({ error: expected('an http(s) URL') })
        .refine(isHttpUrl, { error: (issue) => `expected an http(s) URL${gotParameter(parameter, issue.input)}` });
      break;
    case 'string':
      schema = z
        .string({ error: expected(parameter.secret ? 'a string, best written as "${VARIABLE}"' : 'a string (quote numbers)') })
        // The forge takes an empty required parameter as missing.
        .refine((text) => !parameter.required || text.trim() !== '', { error: `${slug} requires ${name}: it must not be empty` });
      break;
  }
  const description = parameter.secret
    ? 'A secret: write it as "${VARIABLE}"; it is never printed.'
    : parameter.kind === 'enum'
      ? `One of ${(parameter.values ?? []).join(', ')}.`
      : undefined;
  const described = description === undefined ? schema : schema.describe(description);
  return parameter.required ? described : described.optional();
}

/** The declared integrations, typed by slug as the client's `edit` takes them. */
export type DeclaredIntegrations = { readonly [S in IntegrationSlug]?: IntegrationParamsBySlug[S] };

const integrationsSchema = z
  .strictObject(
    Object.fromEntries(
      INTEGRATION_SLUGS.map((slug) => {
        const parameters: Readonly<Record<string, IntegrationParameter>> = INTEGRATION_PARAMETERS[slug];
        const shape = Object.fromEntries(Object.entries(parameters).map(([name, parameter]) => [name, integrationParameter(slug, name, parameter)]));
        return [slug, z.strictObject(shape, { error: `expected the parameters of ${slug} as a mapping` }).optional()];
      }),
    ),
    { error: 'expected a mapping of integration slugs to their parameters, such as { chat-notifications-a: { webhook: "${CHAT_WEBHOOK_URL}" } }' },
  )
  .refine((integrations) => Object.values(integrations).some((value) => value !== undefined), {
    error: 'give at least one integration, or leave the key out',
    // Not also when the only slug is unknown: that one problem says it.
    when: (payload) => payload.issues.length === 0,
  })
  // The table each slug's schema is built from is checked against IntegrationParamsBySlug when compiling.
  .transform((integrations) => integrations as DeclaredIntegrations)
  .describe('Integrations by slug (spec 03), each with its parameters; secrets come from the environment ("${VARIABLE}") and are never printed.');

const base = definePolicyType('project_settings', 'Holds protected branches, approval settings and rules, and integrations to a declared state.', {
  projects: projectSelection().describe(
    'Projects to hold: by id (42), full path (acme/api) or glob ("acme/*" the group\'s own, "acme/**" with its subgroups); a quoted leading "!" excludes.',
  ),
  include_archived: z
    .boolean({ error: 'expected true or false' })
    .default(false)
    .describe('Whether globs select archived projects too; a project listed by id or path is held even when archived.'),
  interval: period().describe('How often the settings are read and compared.'),
  protected_branches: z
    .array(protectedBranchSchema, {
      error: 'expected a list of branches such as [{ name: main, push_access_level: maintainer, merge_access_level: developer }]',
    })
    .min(1, { error: 'give at least one branch, or leave the key out' })
    .superRefine(uniqueNames('branch name', 'protected_branches'), WHEN_A_LIST)
    .optional()
    .describe('Protected branches and wildcards held to these levels; with prune, protections not listed are removed.'),
  approvals: approvalsSchema.optional(),
  integrations: integrationsSchema.optional(),
  prune: z
    .boolean({ error: 'expected true or false' })
    .default(false)
    .describe(
      'Also remove what a declared section does not list: protections, user-defined approval rules (with approvals.rules), active integrations. Sections left out are never touched.',
    ),
  max_actions_per_run: z
    .number()
    .int({ error: 'max_actions_per_run must be a whole number' })
    .min(1, { error: 'max_actions_per_run must be at least 1' })
    .default(50)
    .describe('At most this many changes in one pass; the rest wait for the next (unprotected declared branches go first).'),
});

const SECTIONS = ['protected_branches', 'approvals', 'integrations'] as const;

const schema = base.schema.refine((policy) => SECTIONS.some((section) => policy[section] !== undefined), {
  path: ['protected_branches'],
  error: 'give at least one of protected_branches, approvals or integrations: without them the policy holds nothing',
  when: (payload) => {
    const input = payload.value as Record<string, unknown> | undefined;
    return typeof input === 'object' && input !== null && SECTIONS.every((section) => input[section] === undefined);
  },
});

export const projectSettingsPolicy = { ...base, schema } as const;

export type ProjectSettingsConfig = z.output<typeof schema>;
