import { createHash } from 'node:crypto';
import type { ApprovalRuleType, ProjectApprovalSettings } from '../gitlab/types/approvals';
import type { SeededProject } from './namespaces-state';

/**
 * Merge request approvals, kept apart from the rest of the sandbox state and
 * keyed by project id. Merge requests are addressed by iid within their project.
 */

/** Kept as the forge answers them (`GET /projects/:id/approvals`). */
export type ApprovalSettingsRecord = ProjectApprovalSettings;

export interface ApprovalRuleRecord {
  id: number;
  name: string;
  rule_type: ApprovalRuleType;
  approvals_required: number;
  user_ids: number[];
  group_ids: number[];
}

export interface ProjectApprovalRuleRecord extends ApprovalRuleRecord {
  protected_branch_ids: number[];
}

export interface MergeRequestApprovalRuleRecord extends ApprovalRuleRecord {
  /** The project rule it was created from (`approval_project_rule_id`). */
  source_rule_id: number | null;
}

export interface ExternalApprovalRuleRecord {
  id: number;
  name: string;
  external_url: string;
  protected_branch_ids: number[];
  created_at: string;
  updated_at: string;
}

export interface MergeRequestApprovalsRecord {
  /** Set by the deprecated `POST .../approvals`; null falls back to the project's `approvals_before_merge`. */
  approvals_required: number | null;
  rules: MergeRequestApprovalRuleRecord[];
  /** User ids in approval order. */
  approved_by: number[];
  /** The HEAD commit of the source branch; `approve` with another `sha` is a 409. */
  head_sha: string;
  updated_at: string | null;
}

export interface ProjectApprovalsRecord {
  settings: ApprovalSettingsRecord;
  rules: ProjectApprovalRuleRecord[];
  external_rules: ExternalApprovalRuleRecord[];
  /** By merge request iid. */
  merge_requests: Map<number, MergeRequestApprovalsRecord>;
}

export const DEFAULT_APPROVAL_SETTINGS: ApprovalSettingsRecord = {
  approvals_before_merge: 0,
  reset_approvals_on_push: true,
  disable_overriding_approvers_per_merge_request: false,
  merge_requests_author_approval: false,
  merge_requests_disable_committers_approval: false,
  require_password_to_approve: false,
};

/** A deterministic 40-hex HEAD for a merge request that has none set. */
export function defaultHeadSha(projectId: number, iid: number): string {
  return createHash('sha1').update(`sandbox-merge-request:${projectId}:${iid}`).digest('hex');
}

export class ApprovalsState {
  /**
   * The feature flag `ff_compliance_approval_gates`: off by default; on for the whole instance,
   * or for the project ids in `externalRulesProjects`.
   */
  externalRulesEnabled = false;
  readonly externalRulesProjects = new Set<number>();
  private readonly projects = new Map<number, ProjectApprovalsRecord>();
  private readonly sequences = { projectRule: 0, mergeRequestRule: 0, externalRule: 0 };

  project(projectId: number): ProjectApprovalsRecord {
    let record = this.projects.get(projectId);
    if (!record) {
      record = { settings: { ...DEFAULT_APPROVAL_SETTINGS }, rules: [], external_rules: [], merge_requests: new Map() };
      this.projects.set(projectId, record);
    }
    return record;
  }

  mergeRequest(projectId: number, iid: number): MergeRequestApprovalsRecord {
    const project = this.project(projectId);
    let record = project.merge_requests.get(iid);
    if (!record) {
      record = {
        approvals_required: null,
        rules: [],
        approved_by: [],
        head_sha: defaultHeadSha(projectId, iid),
        updated_at: null,
      };
      project.merge_requests.set(iid, record);
    }
    return record;
  }

  externalRulesOn(projectId: number): boolean {
    return this.externalRulesEnabled || this.externalRulesProjects.has(projectId);
  }

  nextId(kind: keyof ApprovalsState['sequences']): number {
    this.sequences[kind] += 1;
    return this.sequences[kind];
  }

  /** Adds a merge request rule directly, e.g. a system-generated `code_owner` or `report_approver` rule. */
  addMergeRequestRule(
    projectId: number,
    iid: number,
    rule: Omit<MergeRequestApprovalRuleRecord, 'id' | 'source_rule_id'> & { source_rule_id?: number | null },
  ): MergeRequestApprovalRuleRecord {
    const record: MergeRequestApprovalRuleRecord = {
      ...rule,
      source_rule_id: rule.source_rule_id ?? null,
      id: this.nextId('mergeRequestRule'),
    };
    this.mergeRequest(projectId, iid).rules.push(record);
    return record;
  }

  /**
   * The world's approval settings and rules of each project; approvers and branches by name, found through `find`
   * (users, groups and protected branches are seeded already, and the world file was checked to name only those).
   */
  seed(
    projects: readonly SeededProject[],
    find: {
      readonly user: (username: string) => number | undefined;
      readonly group: (path: string) => number | undefined;
      readonly branch: (projectId: number, name: string) => number | undefined;
    },
  ): void {
    for (const { world } of projects) {
      for (const rule of world.approval_rules)
        this.sequences.projectRule = Math.max(this.sequences.projectRule, rule.id ?? 0);
    }
    for (const { world, record } of projects) {
      if (Object.keys(world.approval_settings).length === 0 && world.approval_rules.length === 0) continue;
      const approvals = this.project(record.id);
      Object.assign(approvals.settings, world.approval_settings);
      const ids = (names: readonly string[], lookup: (name: string) => number | undefined) =>
        names.map(lookup).filter((found): found is number => found !== undefined);
      for (const rule of world.approval_rules) {
        approvals.rules.push({
          id: rule.id ?? this.nextId('projectRule'),
          name: rule.name,
          rule_type: rule.rule_type,
          approvals_required: rule.approvals_required,
          user_ids: ids(rule.users, find.user),
          group_ids: ids(rule.groups, find.group),
          protected_branch_ids: ids(rule.protected_branches, (name) => find.branch(record.id, name)),
        });
      }
    }
  }

  /** A deleted project's settings, rules and merge request approvals go with it. */
  forgetProject(projectId: number): void {
    this.projects.delete(projectId);
    this.externalRulesProjects.delete(projectId);
  }

  /** A deleted user is named by no rule and has approved nothing any more. */
  forgetUser(userId: number): void {
    for (const rule of this.allRules()) rule.user_ids = rule.user_ids.filter((id) => id !== userId);
    for (const project of this.projects.values()) {
      for (const mr of project.merge_requests.values()) mr.approved_by = mr.approved_by.filter((id) => id !== userId);
    }
  }

  /** A deleted group is named by no rule. */
  forgetGroup(groupId: number): void {
    for (const rule of this.allRules()) rule.group_ids = rule.group_ids.filter((id) => id !== groupId);
  }

  private allRules(): ApprovalRuleRecord[] {
    return [...this.projects.values()].flatMap((p) => [
      ...p.rules,
      ...[...p.merge_requests.values()].flatMap((mr) => mr.rules),
    ]);
  }

  dump(): Record<string, unknown> {
    return Object.fromEntries(
      [...this.projects].map(([id, p]) => [id, { ...p, merge_requests: Object.fromEntries(p.merge_requests) }]),
    );
  }
}
