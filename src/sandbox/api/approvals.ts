import type {
  ApprovalRuleRecord,
  ExternalApprovalRuleRecord,
  MergeRequestApprovalRuleRecord,
  MergeRequestApprovalsRecord,
  ProjectApprovalRuleRecord,
} from '../approvals-state';
import {
  ApiError,
  boolParam,
  forbidden,
  intParam,
  intRouteParam,
  listParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  requiredParam,
  unauthorized,
  validationError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { IssuableRecord, ProjectRecord } from '../state';
import { currentUser, DEVELOPER, findProject, GUEST, MAINTAINER } from './access';
import { ApprovalPresenter } from './approvals.presenter';

const SETTINGS = [
  'reset_approvals_on_push',
  'disable_overriding_approvers_per_merge_request',
  'merge_requests_author_approval',
  'merge_requests_disable_committers_approval',
  'require_password_to_approve',
] as const;
const SYSTEM_RULE_TYPES = new Set(['report_approver', 'code_owner']);
const MR = '/projects/:id/merge_requests/:merge_request_iid';

/**
 * Merge request approvals (GitLab's "Merge request approvals API", higher tiers). Anyone who sees the project may
 * read, developers approve and manage merge request rules, maintainers change project settings and rules.
 */
export function registerApprovalRoutes(router: Router): void {
  router
    .get('/projects/:id/approvals', (ctx) => ok(approvalsOf(ctx, findProject(ctx, GUEST)).settings))
    .post('/projects/:id/approvals', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const settings = approvalsOf(ctx, project).settings;
      const before = intParam(ctx, 'approvals_before_merge');
      const changes = SETTINGS.map((name) => [name, boolParam(ctx, name)] as const);
      if (before !== undefined) {
        if (before < 0) throw validationError({ approvals_before_merge: ['must be greater than or equal to 0'] });
        settings.approvals_before_merge = before;
      }
      for (const [name, value] of changes) if (value !== undefined) settings[name] = value;
      return ok(settings, 201);
    })
    // ---- project rules ----
    .get('/projects/:id/approval_rules', (ctx) => {
      const project = findProject(ctx, GUEST);
      return paginate(ctx, approvalsOf(ctx, project).rules, (r) => present(ctx).projectRule(project, r));
    })
    .get('/projects/:id/approval_rules/:approval_rule_id', (ctx) => {
      const project = findProject(ctx, GUEST);
      return ok(present(ctx).projectRule(project, findProjectRule(ctx, project)));
    })
    .post('/projects/:id/approval_rules', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const fields = ruleFields(ctx, approvalsOf(ctx, project).rules, undefined);
      const rule: ProjectApprovalRuleRecord = {
        id: ctx.state.approvals.nextId('projectRule'),
        rule_type: 'regular',
        name: fields.name,
        approvals_required: fields.approvals_required,
        user_ids: fields.user_ids ?? [],
        group_ids: fields.group_ids ?? [],
        protected_branch_ids: protectedBranchIds(ctx, project) ?? [],
      };
      approvalsOf(ctx, project).rules.push(rule);
      return ok(present(ctx).projectRule(project, rule), 201);
    })
    .put('/projects/:id/approval_rules/:approval_rule_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const rule = findProjectRule(ctx, project);
      const fields = ruleFields(ctx, approvalsOf(ctx, project).rules, rule);
      const branches = protectedBranchIds(ctx, project);
      applyRuleFields(rule, fields);
      if (branches !== undefined) rule.protected_branch_ids = branches;
      return ok(present(ctx).projectRule(project, rule));
    })
    .delete('/projects/:id/approval_rules/:approval_rule_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const rules = approvalsOf(ctx, project).rules;
      rules.splice(rules.indexOf(findProjectRule(ctx, project)), 1);
      return noContent();
    })
    // ---- external rules (feature flag) ----
    .get('/projects/:id/external_approval_rules', (ctx) => {
      const project = externalRulesProject(ctx, GUEST);
      return paginate(ctx, approvalsOf(ctx, project).external_rules, (r) => present(ctx).externalRule(project, r));
    })
    .post('/projects/:id/external_approval_rules', (ctx) => {
      const project = externalRulesProject(ctx, MAINTAINER);
      const rules = approvalsOf(ctx, project).external_rules;
      const name = requiredParam(ctx, 'name');
      const url = externalUrl(requiredParam(ctx, 'external_url'));
      const branches = protectedBranchIds(ctx, project) ?? [];
      if (rules.some((r) => r.name === name)) throw validationError({ name: ['has already been taken'] });
      const now = ctx.state.nowIso();
      const rule: ExternalApprovalRuleRecord = {
        id: ctx.state.approvals.nextId('externalRule'),
        name,
        external_url: url,
        protected_branch_ids: branches,
        created_at: now,
        updated_at: now,
      };
      rules.push(rule);
      return ok(present(ctx).externalRule(project, rule), 201);
    })
    .put('/projects/:id/external_approval_rules/:rule_id', (ctx) => {
      const project = externalRulesProject(ctx, MAINTAINER);
      const rules = approvalsOf(ctx, project).external_rules;
      const rule = findExternalRule(ctx, project);
      const name = param(ctx, 'name');
      const rawUrl = param(ctx, 'external_url');
      const url = rawUrl === undefined ? undefined : externalUrl(rawUrl);
      const branches = protectedBranchIds(ctx, project);
      if (name !== undefined) {
        if (name === '') throw validationError({ name: ["can't be blank"] });
        if (rules.some((r) => r !== rule && r.name === name))
          throw validationError({ name: ['has already been taken'] });
        rule.name = name;
      }
      if (url !== undefined) rule.external_url = url;
      if (branches !== undefined) rule.protected_branch_ids = branches;
      rule.updated_at = ctx.state.nowIso();
      return ok(present(ctx).externalRule(project, rule));
    })
    .delete('/projects/:id/external_approval_rules/:rule_id', (ctx) => {
      const project = externalRulesProject(ctx, MAINTAINER);
      const rules = approvalsOf(ctx, project).external_rules;
      rules.splice(rules.indexOf(findExternalRule(ctx, project)), 1);
      return noContent();
    })
    // ---- merge request ----
    .get(`${MR}/approvals`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, GUEST);
      return ok(present(ctx).status(project, mr));
    })
    .post(`${MR}/approvals`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, DEVELOPER);
      const required = intParam(ctx, 'approvals_required');
      if (required === undefined) throw paramError('approvals_required is missing');
      const minimum = approvalsOf(ctx, project).settings.approvals_before_merge;
      if (required < minimum) {
        throw validationError({ approvals_before_merge: [`must be greater than or equal to ${minimum}`] });
      }
      const record = mrApprovals(ctx, project, mr);
      record.approvals_required = required;
      record.updated_at = ctx.state.nowIso();
      return ok(present(ctx).status(project, mr), 201);
    })
    .get(`${MR}/approval_state`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, GUEST);
      return ok(present(ctx).approvalState(project, mr));
    })
    .get(`${MR}/approval_rules`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, GUEST);
      return ok(mrApprovals(ctx, project, mr).rules.map((r) => present(ctx).mergeRequestRule(project, r)));
    })
    .post(`${MR}/approval_rules`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, DEVELOPER);
      refuseOverride(ctx, project);
      const record = mrApprovals(ctx, project, mr);
      const sourceId = intParam(ctx, 'approval_project_rule_id');
      let rule: MergeRequestApprovalRuleRecord;
      if (sourceId !== undefined) {
        // Name, users and groups come from the project rule.
        const source = approvalsOf(ctx, project).rules.find((r) => r.id === sourceId);
        if (!source) throw notFound();
        const required = requiredCount(ctx);
        rule = {
          id: 0,
          name: source.name,
          rule_type: 'regular',
          approvals_required: required,
          user_ids: [...source.user_ids],
          group_ids: [...source.group_ids],
          source_rule_id: source.id,
        };
      } else {
        const fields = ruleFields(ctx, record.rules, undefined);
        rule = {
          id: 0,
          name: fields.name,
          rule_type: 'regular',
          approvals_required: fields.approvals_required,
          user_ids: fields.user_ids ?? [],
          group_ids: fields.group_ids ?? [],
          source_rule_id: null,
        };
      }
      rule.id = ctx.state.approvals.nextId('mergeRequestRule');
      record.rules.push(rule);
      return ok(present(ctx).mergeRequestRule(project, rule), 201);
    })
    .put(`${MR}/approval_rules/:approval_rule_id`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, DEVELOPER);
      const record = mrApprovals(ctx, project, mr);
      const rule = findChangeableMergeRequestRule(ctx, record);
      applyRuleFields(rule, ruleFields(ctx, record.rules, rule));
      return ok(present(ctx).mergeRequestRule(project, rule));
    })
    .delete(`${MR}/approval_rules/:approval_rule_id`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, DEVELOPER);
      const record = mrApprovals(ctx, project, mr);
      record.rules.splice(record.rules.indexOf(findChangeableMergeRequestRule(ctx, record)), 1);
      return noContent();
    })
    .post(`${MR}/approve`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, DEVELOPER);
      const user = currentUser(ctx);
      const record = mrApprovals(ctx, project, mr);
      const sha = param(ctx, 'sha');
      if (sha !== undefined && sha !== record.head_sha) {
        throw new ApiError(409, { message: `SHA does not match HEAD of source branch: ${record.head_sha}` });
      }
      // The forge answers 401 when the caller cannot approve (already approved, or the password is missing).
      if (record.approved_by.includes(user.id)) throw unauthorized();
      if (approvalsOf(ctx, project).settings.require_password_to_approve && !param(ctx, 'approval_password')) {
        throw unauthorized();
      }
      record.approved_by.push(user.id);
      record.updated_at = ctx.state.nowIso();
      return ok(present(ctx).status(project, mr), 201);
    })
    .post(`${MR}/unapprove`, (ctx) => {
      const { project, mr } = findMergeRequest(ctx, DEVELOPER);
      const user = currentUser(ctx);
      const record = mrApprovals(ctx, project, mr);
      if (!record.approved_by.includes(user.id)) throw notFound();
      record.approved_by = record.approved_by.filter((id) => id !== user.id);
      record.updated_at = ctx.state.nowIso();
      return ok(present(ctx).status(project, mr), 201);
    });
}

// ---- lookups ----------------------------------------------------------------------------------------------------

function approvalsOf(ctx: RequestContext, project: ProjectRecord) {
  return ctx.state.approvals.project(project.id);
}

function mrApprovals(ctx: RequestContext, project: ProjectRecord, mr: IssuableRecord): MergeRequestApprovalsRecord {
  return ctx.state.approvals.mergeRequest(project.id, mr.iid);
}

function findMergeRequest(ctx: RequestContext, minLevel: number): { project: ProjectRecord; mr: IssuableRecord } {
  const project = findProject(ctx, minLevel);
  const mr = ctx.state.mergeRequest(project.id, intRouteParam(ctx, 'merge_request_iid'));
  if (!mr) throw notFound('Merge Request');
  return { project, mr };
}

function findProjectRule(ctx: RequestContext, project: ProjectRecord): ProjectApprovalRuleRecord {
  const id = intRouteParam(ctx, 'approval_rule_id');
  const rule = approvalsOf(ctx, project).rules.find((r) => r.id === id);
  if (!rule) throw notFound();
  return rule;
}

function findExternalRule(ctx: RequestContext, project: ProjectRecord): ExternalApprovalRuleRecord {
  const id = intRouteParam(ctx, 'rule_id');
  const rule = approvalsOf(ctx, project).external_rules.find((r) => r.id === id);
  if (!rule) throw notFound();
  return rule;
}

/** System-generated rules cannot be changed or deleted (the forge's policy answers 403). */
function findChangeableMergeRequestRule(
  ctx: RequestContext,
  record: MergeRequestApprovalsRecord,
): MergeRequestApprovalRuleRecord {
  const id = intRouteParam(ctx, 'approval_rule_id');
  const rule = record.rules.find((r) => r.id === id);
  if (!rule) throw notFound();
  if (SYSTEM_RULE_TYPES.has(rule.rule_type)) throw forbidden();
  return rule;
}

/** Behind `ff_compliance_approval_gates`; while off the routes answer `404 Not Found`. */
function externalRulesProject(ctx: RequestContext, minLevel: number): ProjectRecord {
  const project = findProject(ctx, minLevel);
  if (!ctx.state.approvals.externalRulesOn(project.id)) throw new ApiError(404, { message: '404 Not Found' });
  return project;
}

function refuseOverride(ctx: RequestContext, project: ProjectRecord): void {
  if (approvalsOf(ctx, project).settings.disable_overriding_approvers_per_merge_request) throw forbidden();
}

// ---- parameters -------------------------------------------------------------------------------------------------

interface RuleFields {
  name: string;
  approvals_required: number;
  user_ids?: number[];
  group_ids?: number[];
}

function requiredCount(ctx: RequestContext): number {
  const required = intParam(ctx, 'approvals_required');
  if (required === undefined) throw paramError('approvals_required is missing');
  if (required < 0) throw validationError({ approvals_required: ['must be greater than or equal to 0'] });
  return required;
}

/** `name` and `approvals_required` required; users and groups must exist; names unique among `siblings`. */
function ruleFields(
  ctx: RequestContext,
  siblings: readonly ApprovalRuleRecord[],
  self: ApprovalRuleRecord | undefined,
): RuleFields {
  const name = requiredParam(ctx, 'name');
  const approvalsRequired = requiredCount(ctx);
  const userIds = idList(ctx, 'user_ids');
  const groupIds = idList(ctx, 'group_ids');
  for (const id of userIds ?? []) if (!ctx.state.users.has(id)) throw validationError({ users: ['is invalid'] });
  for (const id of groupIds ?? []) if (!ctx.state.groups.has(id)) throw validationError({ groups: ['is invalid'] });
  if (siblings.some((r) => r !== self && r.name === name)) throw validationError({ name: ['has already been taken'] });
  return { name, approvals_required: approvalsRequired, user_ids: userIds, group_ids: groupIds };
}

/** Given `user_ids` / `group_ids` replace the lists (absent ones are removed). */
function applyRuleFields(rule: ApprovalRuleRecord, fields: RuleFields): void {
  rule.name = fields.name;
  rule.approvals_required = fields.approvals_required;
  if (fields.user_ids !== undefined) rule.user_ids = fields.user_ids;
  if (fields.group_ids !== undefined) rule.group_ids = fields.group_ids;
}

function idList(ctx: RequestContext, name: string): number[] | undefined {
  const values = listParam(ctx, name);
  if (values === undefined) return undefined;
  const ids = values.filter((v) => v !== '').map((v) => (/^\d+$/.test(v) ? Number(v) : NaN));
  if (ids.some((id) => Number.isNaN(id))) throw paramError(`${name} is invalid`);
  return [...new Set(ids)];
}

function protectedBranchIds(ctx: RequestContext, project: ProjectRecord): number[] | undefined {
  const ids = idList(ctx, 'protected_branch_ids');
  for (const id of ids ?? []) {
    if (ctx.state.protectedBranches.get(id)?.project_id !== project.id)
      throw paramError('protected_branch_ids is invalid');
  }
  return ids;
}

function externalUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol))
    throw validationError({ external_url: ['must be a valid URL'] });
  return value;
}

function present(ctx: RequestContext): ApprovalPresenter {
  return new ApprovalPresenter(ctx.state, ctx.baseUrl);
}
