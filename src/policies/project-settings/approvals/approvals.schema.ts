import { z } from 'zod';
import type { EditProjectApprovalSettingsParams } from '../../../gitlab/types/approvals';
import { flag, got, uniqueNames, WHEN_A_LIST } from '../project-settings.fields';

/** `approvals:` of a project_settings policy: merge request approval settings and rules (a higher tier's). */

const approvalSettingsSchema = z
  .strictObject({
    approvals_before_merge: z
      .number({ error: (issue) => `expected a whole number of approvals${got(issue.input)}` })
      .int({ error: 'expected a whole number of approvals' })
      .min(0, { error: 'expected 0 or more approvals' })
      .optional()
      .describe('Deprecated by the forge in favour of approval rules.'),
    reset_approvals_on_push: flag().optional().describe('Whether a push removes the approvals given.'),
    disable_overriding_approvers_per_merge_request: flag()
      .optional()
      .describe('Whether merge requests may not change their approvers.'),
    merge_requests_author_approval: flag().optional().describe('Whether authors may approve their own merge requests.'),
    merge_requests_disable_committers_approval: flag()
      .optional()
      .describe('Whether committers may not approve merge requests they committed to.'),
    require_password_to_approve: flag().optional().describe('Whether approving asks for the approver’s password.'),
  })
  .describe('Project approval settings (higher tier); only the settings given are held, the others left alone.');

/** The settings keys are exactly those `POST /projects/:id/approvals` takes. */
type _SettingsMatchTheForge = [keyof z.output<typeof approvalSettingsSchema>] extends [
  keyof EditProjectApprovalSettingsParams,
]
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
    group_ids: ids('group').describe(
      'The groups whose members may approve under the rule, by id. Omitted: left as they are.',
    ),
  })
  .describe('A merge request approval rule of the project, found by name.');

export type DeclaredApprovalRule = z.output<typeof approvalRuleSchema>;

export const approvalsSchema = z
  .strictObject({
    settings: approvalSettingsSchema.optional(),
    rules: z
      .array(approvalRuleSchema, {
        error: 'expected a list of rules such as [{ name: security, approvals_required: 1, group_ids: [42] }]',
      })
      .min(1, { error: 'give at least one rule, or leave the key out' })
      .superRefine(uniqueNames('approval rule name', 'rules'), WHEN_A_LIST)
      .optional()
      .describe(
        'Approval rules held by name; with prune, user-defined rules not listed are deleted (never the system rules).',
      ),
  })
  .refine((approvals) => approvals.settings !== undefined || approvals.rules !== undefined, {
    error: 'give settings, rules or both, or leave approvals out',
    when: (payload) => {
      const input = payload.value as Record<string, unknown> | undefined;
      return typeof input === 'object' && input !== null && input.settings === undefined && input.rules === undefined;
    },
  })
  .describe('Merge request approvals (higher tier).')
  .optional();
