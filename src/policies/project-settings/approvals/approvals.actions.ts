import type { ActionResult, PolicyAction } from '../../../engine/policy';
import { checkedAction, SECTION_UNREADABLE, type Subject } from '../project-settings.checked';
import type { ProjectSettingsConfig } from '../project-settings.schema';
import type { SectionRules } from '../project-settings.section';
import type { ObservedProject } from '../project-settings.scope';
import {
  type ApprovalsPart,
  CREATE_APPROVAL_RULE,
  decideApprovals,
  DELETE_APPROVAL_RULE,
  EDIT_APPROVAL_RULE,
  EDIT_APPROVAL_SETTINGS,
  type ObservedApprovalRule,
  SUBJECTS,
} from './approvals.decide';
import { observeApprovals } from './approvals.observer';
import { createRuleTarget, deleteRuleTarget, editRuleTarget, settingsTarget } from './approvals.params';

/** The approval actions; each goes out only while the settings or the rule are as the pass decided. */

const rules: SectionRules<ApprovalsPart> = { observe: observeApprovals, decide: decideApprovals };

/** The settings and the rules are read apart: an action on one reads that one again. */
const settingsOnly = (config: ProjectSettingsConfig): ProjectSettingsConfig => ({
  ...config,
  approvals: config.approvals?.settings ? { settings: config.approvals.settings } : undefined,
});
const rulesOnly = (config: ProjectSettingsConfig): ProjectSettingsConfig => ({
  ...config,
  approvals: config.approvals?.rules ? { rules: config.approvals.rules } : undefined,
});

function ruleText(rule: ObservedApprovalRule): string {
  const ids = (list: readonly { id: number }[]) => `[${list.map((entry) => entry.id).join(', ')}]`;
  return `approval rule ${rule.name} (rule ${rule.id}) requires ${rule.approvals_required}, users ${ids(rule.users)}, groups ${ids(rule.groups)} now`;
}

/** A rule by id (edit, delete) or by name (create), as the forge has it now. */
function ruleSubject(
  rule: { readonly id?: number; readonly name: string },
  config: ProjectSettingsConfig,
  snapshot: ObservedProject & ApprovalsPart,
): Subject {
  const declared = config.approvals?.rules?.some((declaredRule) => declaredRule.name === rule.name) ?? false;
  const what = SUBJECTS.rule(rule.id ?? rule.name);
  const observed = snapshot.approvalRules;
  if (!observed) return { what, related: [what], now: `approval rules ${SECTION_UNREADABLE}`, declared };
  if (rule.id !== undefined) {
    const found = observed.find((candidate) => candidate.id === rule.id);
    return {
      what,
      related: [what],
      now: found ? ruleText(found) : `approval rule ${rule.name} (rule ${rule.id}) is gone`,
      declared,
    };
  }
  const named = observed.filter((candidate) => candidate.name === rule.name);
  const now =
    named.length > 0
      ? `approval rule ${rule.name} exists now (rule ${named.map((found) => found.id).join(', ')})`
      : `approval rule ${rule.name} is still missing`;
  return { what, related: [what, ...named.map((found) => SUBJECTS.rule(found.id))], now, declared };
}

const editApprovalSettings = checkedAction(rules, {
  action: EDIT_APPROVAL_SETTINGS,
  read: settingsTarget,
  narrow: settingsOnly,
  subject: (target, config, snapshot): Subject => {
    const seen = snapshot.approvalSettings;
    const names = Object.keys(target.settings) as (keyof NonNullable<typeof seen>)[];
    const now = seen
      ? `${names.map((name) => `${name} ${String(seen[name])}`).join(', ')} now`
      : `approval settings ${SECTION_UNREADABLE}`;
    return {
      what: SUBJECTS.settings,
      related: [SUBJECTS.settings],
      now,
      declared: config.approvals?.settings !== undefined,
    };
  },
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalSettings.edit(target.project, target.settings);
    return { detail: `set ${Object.keys(target.settings).join(', ')}` };
  },
});

/**
 * A POST whose answer was lost may have created the rule, and a forge that does not refuse duplicates would then get
 * two: the name is looked up again right before the POST.
 */
const createApprovalRule = checkedAction(rules, {
  action: CREATE_APPROVAL_RULE,
  read: createRuleTarget,
  narrow: rulesOnly,
  subject: (target, config, snapshot) => ruleSubject({ name: target.rule.name }, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    for await (const rule of context.client.projectApprovalRules.all(target.project)) {
      if (rule.name === target.rule.name)
        return { detail: `approval rule ${target.rule.name} already there (rule ${rule.id})` };
    }
    const created = await context.client.projectApprovalRules.create(target.project, target.rule);
    return { detail: `created approval rule ${target.rule.name} (rule ${created.id})` };
  },
});

const editApprovalRule = checkedAction(rules, {
  action: EDIT_APPROVAL_RULE,
  read: editRuleTarget,
  narrow: rulesOnly,
  subject: (target, config, snapshot) => ruleSubject({ id: target.ruleId, name: target.rule.name }, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalRules.edit(target.project, target.ruleId, target.rule);
    return { detail: `updated approval rule ${target.rule.name} (rule ${target.ruleId})` };
  },
});

/** Only while the rule is still there and still not declared (or still a second rule of a declared name). */
const deleteApprovalRule = checkedAction(rules, {
  action: DELETE_APPROVAL_RULE,
  read: deleteRuleTarget,
  narrow: rulesOnly,
  subject: (target, config, snapshot) => ruleSubject({ id: target.ruleId, name: target.name }, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalRules.remove(target.project, target.ruleId);
    return { detail: `deleted approval rule ${target.name} (rule ${target.ruleId})` };
  },
});

export const approvalActions: Readonly<Record<string, PolicyAction>> = {
  [EDIT_APPROVAL_SETTINGS]: editApprovalSettings,
  [CREATE_APPROVAL_RULE]: createApprovalRule,
  [EDIT_APPROVAL_RULE]: editApprovalRule,
  [DELETE_APPROVAL_RULE]: deleteApprovalRule,
};
