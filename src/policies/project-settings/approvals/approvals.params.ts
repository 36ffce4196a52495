import { z } from 'zod';
import { param, readParams } from '../../../engine/action-params';
import type { ActionParams, JsonValue } from '../../../engine/policy';
import type { EditProjectApprovalSettingsParams, ProjectApprovalRuleParams } from '../../../gitlab/types/approvals';
import { defined, POLICY, projectParams, projectShape, type ProjectTarget } from '../project-settings.params';

/** What the approval actions carry: the settings that differ, or a rule's body with the declared fields only. */

const settingsSchema = z.object({
  ...projectShape,
  settings: z.strictObject({
    approvals_before_merge: param.integer().optional(),
    reset_approvals_on_push: param.flag().optional(),
    disable_overriding_approvers_per_merge_request: param.flag().optional(),
    merge_requests_author_approval: param.flag().optional(),
    merge_requests_disable_committers_approval: param.flag().optional(),
    require_password_to_approve: param.flag().optional(),
  }),
});

/** edit_approval_settings: only the settings that differ. */
export function settingsParams(
  target: ProjectTarget & { readonly settings: EditProjectApprovalSettingsParams },
): ActionParams {
  return { ...projectParams(target), settings: defined({ ...target.settings }) };
}

export function settingsTarget(
  params: ActionParams,
): ProjectTarget & { readonly settings: EditProjectApprovalSettingsParams } {
  return readParams(POLICY, settingsSchema, params);
}

const ruleBodySchema = z.object({
  name: param.text(),
  approvals_required: param.integer(),
  user_ids: z.array(param.integer()).optional(),
  group_ids: z.array(param.integer()).optional(),
});
const createRuleSchema = z.object({ ...projectShape, rule: ruleBodySchema });
const editRuleSchema = createRuleSchema.extend({ rule_id: param.integer() });
const deleteRuleSchema = z.object({ ...projectShape, rule_id: param.integer(), name: param.text() });

function ruleBody(rule: ProjectApprovalRuleParams): Record<string, JsonValue> {
  return defined({
    name: rule.name,
    approvals_required: rule.approvals_required,
    user_ids: rule.user_ids,
    group_ids: rule.group_ids,
  });
}

/** create_approval_rule: the body of `POST /projects/:id/approval_rules`, the declared fields only. */
export function createRuleParams(target: ProjectTarget & { readonly rule: ProjectApprovalRuleParams }): ActionParams {
  return { ...projectParams(target), rule: ruleBody(target.rule) };
}

export function createRuleTarget(params: ActionParams): ProjectTarget & { readonly rule: ProjectApprovalRuleParams } {
  return readParams(POLICY, createRuleSchema, params);
}

/** edit_approval_rule: `PUT .../approval_rules/:rule_id`, which keeps the rule's id (merge requests refer to it). */
export function editRuleParams(
  target: ProjectTarget & { readonly ruleId: number; readonly rule: ProjectApprovalRuleParams },
): ActionParams {
  return { ...projectParams(target), rule_id: target.ruleId, rule: ruleBody(target.rule) };
}

export function editRuleTarget(
  params: ActionParams,
): ProjectTarget & { readonly ruleId: number; readonly rule: ProjectApprovalRuleParams } {
  const read = readParams(POLICY, editRuleSchema, params);
  return { project: read.project, source: read.source, ruleId: read.rule_id, rule: read.rule };
}

/** delete_approval_rule; the name is for the audit trail's detail. */
export function deleteRuleParams(
  target: ProjectTarget & { readonly ruleId: number; readonly name: string },
): ActionParams {
  return { ...projectParams(target), rule_id: target.ruleId, name: target.name };
}

export function deleteRuleTarget(
  params: ActionParams,
): ProjectTarget & { readonly ruleId: number; readonly name: string } {
  const read = readParams(POLICY, deleteRuleSchema, params);
  return { project: read.project, source: read.source, ruleId: read.rule_id, name: read.name };
}
