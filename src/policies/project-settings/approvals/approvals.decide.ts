import type { Decision } from '../../../engine/policy';
import type { ProjectApprovalRule, ProjectApprovalSettings } from '../../../gitlab/types/approvals';
import {
  decision,
  NOT_AVAILABLE,
  type ProjectScope,
  SECTION_UNAVAILABLE,
  type SectionDecisions,
  skip,
} from '../project-settings.scope';
import { createRuleParams, deleteRuleParams, editRuleParams, settingsParams } from './approvals.params';
import type { DeclaredApprovalRule } from './approvals.schema';

/** Deciding a project's approval settings and rules: only what is declared, users and groups compared as sets. */

export const EDIT_APPROVAL_SETTINGS = 'edit_approval_settings';
export const CREATE_APPROVAL_RULE = 'create_approval_rule';
export const EDIT_APPROVAL_RULE = 'edit_approval_rule';
export const DELETE_APPROVAL_RULE = 'delete_approval_rule';

/** The middle of the keys (see subjectOf): the settings, and a rule by id (or by name, while it is to be created). */
export const SUBJECTS = {
  settings: 'approvals:settings',
  rule: (idOrName: number | string) => `approval_rule:${idOrName}`,
} as const;

/** The one rule type prune may delete: the forge generates the others (`report_approver`, `code_owner`, any new one). */
const USER_DEFINED_RULE = 'regular';

/** What decide reads of a project approval rule; the forge's ProjectApprovalRule is one. */
export type ObservedApprovalRule = Pick<
  ProjectApprovalRule,
  'id' | 'name' | 'rule_type' | 'approvals_required' | 'contains_hidden_groups'
> & {
  readonly users: readonly { readonly id: number }[];
  readonly groups: readonly { readonly id: number }[];
};

/** What the section reads of a project, for what the policy declares; absent: the forge does not offer it. */
export interface ApprovalsPart {
  /** A setting absent from the answer is one this forge lacks. */
  readonly approvalSettings?: Readonly<Partial<ProjectApprovalSettings>>;
  readonly approvalRules?: readonly ObservedApprovalRule[];
}

type ApprovalScope = ProjectScope<ApprovalsPart>;

function settingsDecisions(scope: ApprovalScope): Decision[] {
  const declared = scope.config.approvals?.settings;
  if (!declared) return [];
  const observed = scope.snapshot.approvalSettings;
  if (!observed) return [skip(scope, 'approval settings', SUBJECTS.settings, SECTION_UNAVAILABLE)];
  const skips: Decision[] = [];
  const changes: string[] = [];
  const differing: Record<string, number | boolean> = {};
  for (const [name, value] of Object.entries(declared) as [
    keyof ProjectApprovalSettings,
    number | boolean | undefined,
  ][]) {
    if (value === undefined) continue;
    const seen = observed[name];
    if (seen === undefined) {
      skips.push(skip(scope, 'approval settings', `approvals:settings:${name}`, `${name} ${NOT_AVAILABLE}`));
    } else if (seen !== value) {
      changes.push(`${name} ${String(seen)} → ${String(value)}`);
      differing[name] = value;
    }
  }
  if (changes.length === 0) return skips;
  const params = settingsParams({ ...scope.target, settings: differing });
  return [
    decision(scope, EDIT_APPROVAL_SETTINGS, 'approval settings', SUBJECTS.settings, changes.join(', '), params),
    ...skips,
  ];
}

function sortedIds(ids: readonly number[]): number[] {
  return [...new Set(ids)].sort((a, b) => a - b);
}

function idsText(ids: readonly number[]): string {
  return `[${ids.join(', ')}]`;
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, index) => id === b[index]);
}

function declaredBody(rule: DeclaredApprovalRule) {
  return {
    name: rule.name,
    approvals_required: rule.approvals_required,
    ...(rule.user_ids !== undefined ? { user_ids: sortedIds(rule.user_ids) } : {}),
    ...(rule.group_ids !== undefined ? { group_ids: sortedIds(rule.group_ids) } : {}),
  };
}

function compareRule(scope: ApprovalScope, rule: DeclaredApprovalRule, observed: ObservedApprovalRule): Decision[] {
  const subject = `approval rule ${rule.name}`;
  const what = SUBJECTS.rule(observed.id);
  const changes: string[] = [];
  const skips: Decision[] = [];
  if (observed.approvals_required !== rule.approvals_required)
    changes.push(`approvals_required ${observed.approvals_required} → ${rule.approvals_required}`);
  if (rule.user_ids !== undefined) {
    const [seen, wanted] = [sortedIds(observed.users.map((user) => user.id)), sortedIds(rule.user_ids)];
    if (!sameIds(seen, wanted)) changes.push(`user_ids ${idsText(seen)} → ${idsText(wanted)}`);
  }
  if (rule.group_ids !== undefined) {
    const [seen, wanted] = [sortedIds(observed.groups.map((group) => group.id)), sortedIds(rule.group_ids)];
    if (observed.contains_hidden_groups) {
      // The token sees only some of the rule's groups: a visible group not declared is drift, the hidden ones
      // cannot be compared (an edit, for another reason, still sets exactly the declared groups).
      if (seen.some((id) => !wanted.includes(id)))
        changes.push(`group_ids ${idsText(seen)} and hidden groups → ${idsText(wanted)}`);
      else
        skips.push(
          skip(
            scope,
            subject,
            `${what}:group_ids`,
            'group_ids not fully compared: the rule has groups this token cannot see',
          ),
        );
    } else if (!sameIds(seen, wanted)) {
      changes.push(`group_ids ${idsText(seen)} → ${idsText(wanted)}`);
    }
  }
  if (changes.length === 0) return skips;
  const params = editRuleParams({ ...scope.target, ruleId: observed.id, rule: declaredBody(rule) });
  return [decision(scope, EDIT_APPROVAL_RULE, subject, what, changes.join(', '), params), ...skips];
}

function ruleDecisions(scope: ApprovalScope): Decision[] {
  const declared = scope.config.approvals?.rules;
  if (!declared) return [];
  const observed = scope.snapshot.approvalRules;
  if (!observed) return [skip(scope, 'approval rules', 'approval_rules', SECTION_UNAVAILABLE)];
  const byId = [...observed].sort((a, b) => a.id - b.id);
  // A declared rule is the forge's oldest rule of that name; a younger one of the same name is an undeclared extra.
  const holder = new Map<string, ObservedApprovalRule>();
  for (const rule of byId) if (!holder.has(rule.name)) holder.set(rule.name, rule);

  const decisions: Decision[] = [];
  for (const rule of declared) {
    const found = holder.get(rule.name);
    if (found) {
      decisions.push(...compareRule(scope, rule, found));
    } else {
      const params = createRuleParams({ ...scope.target, rule: declaredBody(rule) });
      decisions.push(
        decision(
          scope,
          CREATE_APPROVAL_RULE,
          `approval rule ${rule.name}`,
          SUBJECTS.rule(rule.name),
          'missing → create',
          params,
        ),
      );
    }
  }
  if (scope.config.prune) {
    const names = new Set(declared.map((rule) => rule.name));
    for (const rule of byId) {
      if (rule.rule_type !== USER_DEFINED_RULE) continue;
      const kept = names.has(rule.name) ? holder.get(rule.name) : undefined;
      if (kept?.id === rule.id) continue;
      const why = kept ? `a second rule of this name (rule ${kept.id} is held) → delete` : 'not declared → delete';
      const params = deleteRuleParams({ ...scope.target, ruleId: rule.id, name: rule.name });
      decisions.push(
        decision(
          scope,
          DELETE_APPROVAL_RULE,
          `approval rule ${rule.name} (id ${rule.id})`,
          SUBJECTS.rule(rule.id),
          why,
          params,
        ),
      );
    }
  }
  return decisions;
}

/** The settings, then the rules. */
export function decideApprovals(scope: ApprovalScope): SectionDecisions {
  return { first: [], rest: [...settingsDecisions(scope), ...ruleDecisions(scope)] };
}
