import type {
  ApprovalRuleRecord,
  ExternalApprovalRuleRecord,
  MergeRequestApprovalRuleRecord,
  MergeRequestApprovalsRecord,
  ProjectApprovalRuleRecord,
} from '../approvals-state';
import type { GroupRecord, IssuableRecord, ProjectRecord, ProtectedBranchRecord, UserRecord } from '../state';
import { GUEST } from './access';
import { GroupPresenter } from './groups.presenter';
import { Presenter } from './presenter';
import { ProtectedBranchPresenter } from './protected-branches.presenter';

/**
 * Merge request approvals as the forge's Merge request approvals API shows them: a merge request's approval status
 * and state, project, merge request and external rules. Who counts as an approver is read here, from the rules'
 * users and groups at the moment of the answer.
 */
export class ApprovalPresenter extends Presenter {
  /** `GET .../merge_requests/:iid/approvals`: what is required, what is left, who approved. */
  status(project: ProjectRecord, mr: IssuableRecord): Record<string, unknown> {
    const record = this.state.approvals.mergeRequest(project.id, mr.iid);
    const rules = this.effectiveRules(project, mr);
    const fallback =
      record.approvals_required ?? this.state.approvals.project(project.id).settings.approvals_before_merge;
    const byRules = rules.reduce((sum, r) => sum + r.approvals_required, 0);
    const leftByRules = rules.reduce(
      (sum, r) => sum + Math.max(0, r.approvals_required - this.approversUnder(r, record).length),
      0,
    );
    const leftByCount = Math.max(0, fallback - record.approved_by.length);
    const created = project.created_at;
    return {
      id: mr.id,
      iid: mr.iid,
      project_id: project.id,
      title: mr.title,
      description: '',
      state: 'opened',
      created_at: created,
      updated_at: record.updated_at ?? created,
      merge_status: 'can_be_merged',
      approvals_required: Math.max(fallback, byRules),
      approvals_left: Math.max(leftByCount, leftByRules),
      approved_by: record.approved_by
        .map((id) => this.state.users.get(id))
        .filter((u): u is UserRecord => u !== undefined)
        .map((u) => ({ user: this.userSummary(u) })),
    };
  }

  /** `GET .../merge_requests/:iid/approval_state`: each rule that applies, with who approved under it. */
  approvalState(project: ProjectRecord, mr: IssuableRecord): Record<string, unknown> {
    const record = this.state.approvals.mergeRequest(project.id, mr.iid);
    return {
      approval_rules_overwritten: record.rules.length > 0,
      rules: this.effectiveRules(project, mr).map((rule) => {
        const approvedBy = this.approversUnder(rule, record);
        return {
          ...this.mergeRequestRule(project, rule),
          approved_by: approvedBy.map((u) => this.userSummary(u)),
          approved: approvedBy.length >= rule.approvals_required,
        };
      }),
    };
  }

  projectRule(project: ProjectRecord, rule: ProjectApprovalRuleRecord): Record<string, unknown> {
    const branches = new ProtectedBranchPresenter(this.state, this.baseUrl);
    return {
      ...this.ruleBase(rule),
      protected_branches: rule.protected_branch_ids
        .map((id) => this.state.protectedBranches.get(id))
        .filter((b): b is ProtectedBranchRecord => b !== undefined && b.project_id === project.id)
        .map((b) => branches.protectedBranch(b)),
    };
  }

  mergeRequestRule(project: ProjectRecord, rule: MergeRequestApprovalRuleRecord): Record<string, unknown> {
    const source =
      rule.source_rule_id === null
        ? undefined
        : this.state.approvals.project(project.id).rules.find((r) => r.id === rule.source_rule_id);
    return {
      ...this.ruleBase(rule),
      source_rule: source ? { approvals_required: source.approvals_required } : null,
      overridden: source !== undefined && source.approvals_required !== rule.approvals_required,
    };
  }

  externalRule(project: ProjectRecord, rule: ExternalApprovalRuleRecord): Record<string, unknown> {
    return {
      id: rule.id,
      name: rule.name,
      project_id: project.id,
      external_url: rule.external_url,
      protected_branches: rule.protected_branch_ids
        .map((id) => this.state.protectedBranches.get(id))
        .filter((b): b is ProtectedBranchRecord => b !== undefined)
        .map((b) => ({
          id: b.id,
          project_id: b.project_id,
          name: b.name,
          created_at: rule.created_at,
          updated_at: rule.updated_at,
          code_owner_approval_required: b.code_owner_approval_required,
        })),
    };
  }

  private ruleBase(rule: ApprovalRuleRecord): Record<string, unknown> {
    return {
      id: rule.id,
      name: rule.name,
      rule_type: rule.rule_type,
      eligible_approvers: this.eligible(rule).map((u) => this.userSummary(u)),
      approvals_required: rule.approvals_required,
      users: rule.user_ids
        .map((id) => this.state.users.get(id))
        .filter((u): u is UserRecord => u !== undefined)
        .map((u) => this.userSummary(u)),
      groups: rule.group_ids
        .map((id) => this.state.groups.get(id))
        .filter((g): g is GroupRecord => g !== undefined)
        .map((g) => this.ruleGroup(g)),
      contains_hidden_groups: false,
    };
  }

  /** A rule's group: the group as lists show it, without its creation time, with the LDAP fields. */
  private ruleGroup(group: GroupRecord): Record<string, unknown> {
    const { created_at: _createdAt, ...listed } = new GroupPresenter(this.state, this.baseUrl).group(group);
    return { ...listed, ldap_cn: null, ldap_access: null };
  }

  /** The merge request's own rules when it has any, else the project's rules (as the forge's approval state does). */
  private effectiveRules(project: ProjectRecord, mr: IssuableRecord): MergeRequestApprovalRuleRecord[] {
    const own = this.state.approvals.mergeRequest(project.id, mr.iid).rules;
    if (own.length > 0) return own;
    return this.state.approvals.project(project.id).rules.map((r) => ({ ...r, source_rule_id: null }));
  }

  private eligible(rule: ApprovalRuleRecord): UserRecord[] {
    const ids = new Set(rule.user_ids);
    for (const groupId of rule.group_ids) {
      for (const m of this.state.members)
        if (m.source === 'group' && m.source_id === groupId && m.access_level >= GUEST) ids.add(m.user_id);
    }
    return [...ids].map((id) => this.state.users.get(id)).filter((u): u is UserRecord => u !== undefined);
  }

  private approversUnder(rule: ApprovalRuleRecord, record: MergeRequestApprovalsRecord): UserRecord[] {
    const ids = new Set(this.eligible(rule).map((u) => u.id));
    return record.approved_by.filter((id) => ids.has(id)).map((id) => this.state.users.get(id) as UserRecord);
  }
}
