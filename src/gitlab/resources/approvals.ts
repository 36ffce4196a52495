import { endpoint, type ProjectId } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import type {
  ApproveMergeRequestParams,
  CreateExternalApprovalRuleParams,
  CreateMergeRequestApprovalRuleParams,
  EditExternalApprovalRuleParams,
  EditMergeRequestApprovalRuleParams,
  EditMergeRequestApprovalsParams,
  EditProjectApprovalSettingsParams,
  ExternalApprovalRule,
  MergeRequestApprovalRule,
  MergeRequestApprovals,
  MergeRequestApprovalState,
  ProjectApprovalRule,
  ProjectApprovalRuleParams,
  ProjectApprovalSettings,
} from '../types/approvals';

/** GitLab's "Merge request approvals API", project approval settings (`/projects/:id/approvals`). */
export class ProjectApprovalSettingsResource {
  constructor(private readonly transport: Transport) {}

  show(project: ProjectId): Promise<ProjectApprovalSettings> {
    return this.transport.json<ProjectApprovalSettings>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/approvals`,
    });
  }

  /** `POST`: changes only the settings given. */
  edit(project: ProjectId, params: EditProjectApprovalSettingsParams): Promise<ProjectApprovalSettings> {
    return this.transport.json<ProjectApprovalSettings>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/approvals`,
      body: params,
    });
  }
}

/** Project-level approval rules (`/projects/:id/approval_rules`). */
export class ProjectApprovalRulesResource {
  constructor(private readonly transport: Transport) {}

  all(project: ProjectId, page?: PageOptions<ProjectApprovalRule>): Paginated<ProjectApprovalRule> {
    return this.transport.paginate<ProjectApprovalRule>(
      { method: 'GET', endpoint: endpoint`projects/${project}/approval_rules` },
      page,
    );
  }

  show(project: ProjectId, ruleId: number): Promise<ProjectApprovalRule> {
    return this.transport.json<ProjectApprovalRule>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/approval_rules/${ruleId}`,
    });
  }

  create(project: ProjectId, params: ProjectApprovalRuleParams): Promise<ProjectApprovalRule> {
    return this.transport.json<ProjectApprovalRule>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/approval_rules`,
      body: params,
    });
  }

  /** `PUT`: users and groups absent from given `user_ids` / `group_ids` are removed. */
  edit(project: ProjectId, ruleId: number, params: ProjectApprovalRuleParams): Promise<ProjectApprovalRule> {
    return this.transport.json<ProjectApprovalRule>({
      method: 'PUT',
      endpoint: endpoint`projects/${project}/approval_rules/${ruleId}`,
      body: params,
    });
  }

  async remove(project: ProjectId, ruleId: number): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/approval_rules/${ruleId}`,
    });
  }
}

/**
 * External approval rules (top tier, `/projects/:id/external_approval_rules`), behind the feature flag
 * `ff_compliance_approval_gates`: while it is off the forge answers 404 (NotFoundError).
 */
export class ExternalApprovalRulesResource {
  constructor(private readonly transport: Transport) {}

  all(project: ProjectId, page?: PageOptions<ExternalApprovalRule>): Paginated<ExternalApprovalRule> {
    return this.transport.paginate<ExternalApprovalRule>(
      { method: 'GET', endpoint: endpoint`projects/${project}/external_approval_rules` },
      page,
    );
  }

  create(project: ProjectId, params: CreateExternalApprovalRuleParams): Promise<ExternalApprovalRule> {
    return this.transport.json<ExternalApprovalRule>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/external_approval_rules`,
      body: params,
    });
  }

  edit(project: ProjectId, ruleId: number, params: EditExternalApprovalRuleParams): Promise<ExternalApprovalRule> {
    return this.transport.json<ExternalApprovalRule>({
      method: 'PUT',
      endpoint: endpoint`projects/${project}/external_approval_rules/${ruleId}`,
      body: params,
    });
  }

  async remove(project: ProjectId, ruleId: number): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/external_approval_rules/${ruleId}`,
    });
  }
}

/** A merge request's approvals: status, state, approve and unapprove (`/projects/:id/merge_requests/:iid/...`). */
export class MergeRequestApprovalsResource {
  constructor(private readonly transport: Transport) {}

  show(project: ProjectId, mergeRequestIid: number): Promise<MergeRequestApprovals> {
    return this.transport.json<MergeRequestApprovals>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approvals`,
    });
  }

  /** Deprecated `POST .../approvals`: sets the number of approvals required. */
  edit(
    project: ProjectId,
    mergeRequestIid: number,
    params: EditMergeRequestApprovalsParams,
  ): Promise<MergeRequestApprovals> {
    return this.transport.json<MergeRequestApprovals>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approvals`,
      body: params,
    });
  }

  state(project: ProjectId, mergeRequestIid: number): Promise<MergeRequestApprovalState> {
    return this.transport.json<MergeRequestApprovalState>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approval_state`,
    });
  }

  /** A `sha` other than the merge request's HEAD is a ConflictError (409) and records no approval. */
  approve(
    project: ProjectId,
    mergeRequestIid: number,
    params: ApproveMergeRequestParams = {},
  ): Promise<MergeRequestApprovals> {
    return this.transport.json<MergeRequestApprovals>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approve`,
      body: params,
    });
  }

  /** Removes the caller's approval. */
  async unapprove(project: ProjectId, mergeRequestIid: number): Promise<void> {
    await this.transport.request<unknown>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/unapprove`,
    });
  }
}

/**
 * A merge request's own approval rules. `report_approver` and `code_owner` rules are system generated: changing or
 * deleting them is refused by the forge (ForbiddenError).
 */
export class MergeRequestApprovalRulesResource {
  constructor(private readonly transport: Transport) {}

  all(project: ProjectId, mergeRequestIid: number): Promise<MergeRequestApprovalRule[]> {
    return this.transport.json<MergeRequestApprovalRule[]>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approval_rules`,
    });
  }

  create(
    project: ProjectId,
    mergeRequestIid: number,
    params: CreateMergeRequestApprovalRuleParams,
  ): Promise<MergeRequestApprovalRule> {
    return this.transport.json<MergeRequestApprovalRule>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approval_rules`,
      body: params,
    });
  }

  edit(
    project: ProjectId,
    mergeRequestIid: number,
    ruleId: number,
    params: EditMergeRequestApprovalRuleParams,
  ): Promise<MergeRequestApprovalRule> {
    return this.transport.json<MergeRequestApprovalRule>({
      method: 'PUT',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approval_rules/${ruleId}`,
      body: params,
    });
  }

  async remove(project: ProjectId, mergeRequestIid: number, ruleId: number): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/merge_requests/${mergeRequestIid}/approval_rules/${ruleId}`,
    });
  }
}
