import type { Timestamp } from './common';
import type { Group } from './groups';
import type { ProtectedBranch } from './protected-branches';
import type { UserSummary } from './users';

/** A project's approval settings (GitLab's "Merge request approvals API"). */
export interface ProjectApprovalSettings {
  approvals_before_merge: number;
  reset_approvals_on_push: boolean;
  disable_overriding_approvers_per_merge_request: boolean;
  /** True lets authors approve their own merge requests. */
  merge_requests_author_approval: boolean;
  merge_requests_disable_committers_approval: boolean;
  require_password_to_approve: boolean;
}

/** `POST /projects/:id/approvals`: every setting optional. */
export interface EditProjectApprovalSettingsParams {
  /** Deprecated: use approval rules. */
  approvals_before_merge?: number;
  reset_approvals_on_push?: boolean;
  disable_overriding_approvers_per_merge_request?: boolean;
  merge_requests_author_approval?: boolean;
  merge_requests_disable_committers_approval?: boolean;
  require_password_to_approve?: boolean;
}

/** Approval rule types: `regular` is user defined; `report_approver` and `code_owner` are system generated. */
export const APPROVAL_RULE_TYPES = ['regular', 'report_approver', 'code_owner'] as const;
export type ApprovalRuleType = (typeof APPROVAL_RULE_TYPES)[number];

/** The group object of an approval rule: a group as listed, without its creation time, with LDAP fields. */
export interface ApprovalRuleGroup extends Omit<Group, 'created_at'> {
  ldap_cn: string | null;
  ldap_access: number | null;
}

interface ApprovalRuleBase {
  id: number;
  name: string;
  rule_type: ApprovalRuleType;
  eligible_approvers: UserSummary[];
  approvals_required: number;
  users: UserSummary[];
  groups: ApprovalRuleGroup[];
  contains_hidden_groups: boolean;
}

/** A project-level rule: adds the protected branches it applies to (higher tier). */
export interface ProjectApprovalRule extends ApprovalRuleBase {
  protected_branches: ProtectedBranch[];
}

/** A merge-request-level rule: `source_rule` is the project rule it was copied from, or null. */
export interface MergeRequestApprovalRule extends ApprovalRuleBase {
  source_rule: { approvals_required: number } | null;
  overridden: boolean;
}

/** A rule of the approval state: adds who approved under it and whether it is satisfied. */
export interface MergeRequestApprovalStateRule extends MergeRequestApprovalRule {
  approved_by: UserSummary[];
  approved: boolean;
}

/** A merge request's approval state (`approval_state`). */
export interface MergeRequestApprovalState {
  /** True when merge-request-level rules exist for the merge request. */
  approval_rules_overwritten: boolean;
  rules: MergeRequestApprovalStateRule[];
}

/** A merge request's approval status (`approvals`). */
export interface MergeRequestApprovals {
  id: number;
  iid: number;
  project_id: number;
  title: string;
  description: string;
  /** Seen: `opened`. */
  state: 'opened' | 'closed' | 'locked' | 'merged';
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Seen: `cannot_be_merged`, `can_be_merged`. */
  merge_status: 'can_be_merged' | 'cannot_be_merged' | 'unchecked' | 'checking' | 'cannot_be_merged_recheck';
  approvals_required: number;
  approvals_left: number;
  approved_by: { user: UserSummary }[];
}

/** `POST/PUT /projects/:id/approval_rules[/:approval_rule_id]`: `name` and `approvals_required` required. */
export interface ProjectApprovalRuleParams {
  name: string;
  approvals_required: number;
  user_ids?: number[];
  group_ids?: number[];
  /** Higher tier. */
  protected_branch_ids?: number[];
}

/** `POST /projects/:id/merge_requests/:iid/approval_rules`. */
export interface CreateMergeRequestApprovalRuleParams {
  name: string;
  approvals_required: number;
  /** Copies name, users and groups from that project rule; the given `approvals_required` is used. */
  approval_project_rule_id?: number;
  user_ids?: number[];
  group_ids?: number[];
}

/** `PUT /projects/:id/merge_requests/:iid/approval_rules/:approval_rule_id`. */
export interface EditMergeRequestApprovalRuleParams {
  name: string;
  approvals_required: number;
  user_ids?: number[];
  group_ids?: number[];
}

/** `POST /projects/:id/merge_requests/:iid/approvals` (deprecated). */
export interface EditMergeRequestApprovalsParams {
  approvals_required: number;
}

/** `POST /projects/:id/merge_requests/:iid/approve`. */
export interface ApproveMergeRequestParams {
  /** When given, must equal the merge request's HEAD, else a ConflictError (409) and no approval. */
  sha?: string;
  /** Required when the project requires a password to approve (higher tier). */
  approval_password?: string;
}

/** An external approval rule (top tier). */
export interface ExternalApprovalRule {
  id: number;
  name: string;
  project_id: number;
  external_url: string;
  protected_branches: ExternalApprovalRuleBranch[];
}

export interface ExternalApprovalRuleBranch {
  id: number;
  project_id: number;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  code_owner_approval_required: boolean;
}

export interface CreateExternalApprovalRuleParams {
  name: string;
  external_url: string;
  protected_branch_ids?: number[];
}

export type EditExternalApprovalRuleParams = Partial<CreateExternalApprovalRuleParams>;
