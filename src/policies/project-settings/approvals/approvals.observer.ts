import type { ObserveContext } from '../../../engine/policy';
import type { ProjectApprovalSettings } from '../../../gitlab/types/approvals';
import { oddAnswer, shapeOf, unlessUnavailable } from '../project-settings.answers';
import type { ProjectSettingsConfig } from '../project-settings.schema';
import type { ApprovalsPart, ObservedApprovalRule } from './approvals.decide';

/** A project's approval settings and rules, each only when declared; a forge without them (a lower tier) leaves them out. */

const APPROVAL_SETTINGS = [
  'approvals_before_merge',
  'reset_approvals_on_push',
  'disable_overriding_approvers_per_merge_request',
  'merge_requests_author_approval',
  'merge_requests_disable_committers_approval',
  'require_password_to_approve',
] as const satisfies readonly (keyof ProjectApprovalSettings)[];

export async function observeApprovals(
  config: ProjectSettingsConfig,
  context: ObserveContext,
  projectId: number,
): Promise<ApprovalsPart> {
  const approvals = config.approvals;
  const [approvalSettings, approvalRules] = await Promise.all([
    approvals?.settings ? readApprovalSettings(context, projectId) : undefined,
    approvals?.rules ? readApprovalRules(context, projectId) : undefined,
  ]);
  return { ...(approvalSettings ? { approvalSettings } : {}), ...(approvalRules ? { approvalRules } : {}) };
}

async function readApprovalSettings(
  context: ObserveContext,
  projectId: number,
): Promise<Partial<ProjectApprovalSettings> | undefined> {
  const answer = await unlessUnavailable(() => context.client.projectApprovalSettings.show(projectId));
  if (answer === undefined) return undefined;
  // Only the settings the forge answers: one it leaves out is one it lacks.
  const seen: Partial<ProjectApprovalSettings> = answer;
  const settings: Record<string, number | boolean> = {};
  for (const name of APPROVAL_SETTINGS) {
    const value = seen[name];
    if (value !== undefined) settings[name] = value;
  }
  return settings;
}

async function readApprovalRules(
  context: ObserveContext,
  projectId: number,
): Promise<ObservedApprovalRule[] | undefined> {
  return unlessUnavailable(async () => {
    const rules: ObservedApprovalRule[] = [];
    for await (const answer of context.client.projectApprovalRules.all(projectId))
      rules.push(toObservedRule(answer, rules.length, projectId));
    return rules;
  });
}

/** The numeric ids of a list of users or groups in an answer, or why there are none. */
function idsOf(list: unknown): { id: number }[] | string {
  if (!Array.isArray(list)) return shapeOf(list);
  const ids: { id: number }[] = [];
  for (const entry of list as unknown[]) {
    const id = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).id : undefined;
    if (typeof id !== 'number') return `has an entry without a numeric id`;
    ids.push({ id });
  }
  return ids;
}

/** A rule as decide compares it: without its `users`, a rule would read as having none and be "edited" every pass. */
function toObservedRule(answer: unknown, item: number, projectId: number): ObservedApprovalRule {
  const odd = (field: string, problem: string) =>
    oddAnswer(`projects/${projectId}/approval_rules`, item, field, problem);
  if (typeof answer !== 'object' || answer === null) throw odd('', 'is not an approval rule');
  const rule = answer as Record<string, unknown>;
  if (typeof rule.id !== 'number') throw odd('id', shapeOf(rule.id));
  if (typeof rule.name !== 'string') throw odd('name', shapeOf(rule.name));
  if (typeof rule.rule_type !== 'string') throw odd('rule_type', shapeOf(rule.rule_type));
  if (typeof rule.approvals_required !== 'number') throw odd('approvals_required', shapeOf(rule.approvals_required));
  const users = idsOf(rule.users);
  if (typeof users === 'string') throw odd('users', users);
  const groups = idsOf(rule.groups);
  if (typeof groups === 'string') throw odd('groups', groups);
  return {
    id: rule.id,
    name: rule.name,
    rule_type: rule.rule_type as ObservedApprovalRule['rule_type'],
    approvals_required: rule.approvals_required,
    // Absent where the forge has no hidden groups to speak of: none hidden.
    contains_hidden_groups: rule.contains_hidden_groups === true,
    users,
    groups,
  };
}
