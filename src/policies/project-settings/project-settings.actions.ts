import { configOf, defineAction } from '../../engine/action-params';
import { type ActionParams, type ActionResult, type PolicyAction, type PolicyContext, SKIP } from '../../engine/policy';
import { readJsonObject } from '../../engine/json';
import { ConflictError, NotFoundError, ValidationError } from '../../gitlab/transport/errors';
import { type IntegrationParamsBySlug, type IntegrationSlug } from '../../gitlab/types/integrations';
import type { ProtectBranchParams, ProtectedBranchAllowedTo } from '../../gitlab/types/protected-branches';
import {
  CREATE_APPROVAL_RULE,
  decideProjectSettings,
  DELETE_APPROVAL_RULE,
  DISABLE_INTEGRATION,
  EDIT_APPROVAL_RULE,
  EDIT_APPROVAL_SETTINGS,
  EDIT_PROTECTED_BRANCH,
  entityText,
  FORGET_INTERRUPTED,
  type ProjectSettingsProjectSnapshot,
  PROTECT_BRANCH,
  protectionText,
  REPROTECT_BRANCH,
  SET_INTEGRATION,
  SUBJECTS,
  subjectOf,
  UNPROTECT_BRANCH,
} from './project-settings.decide';
import { observeProject } from './project-settings.observer';
import { createRuleTarget, deleteRuleTarget, editRuleTarget, settingsTarget } from './approvals/approvals.params';
import { fingerprintStateKey, integrationRequest, integrationTarget, setIntegrationTarget } from './integrations/integrations.params';
import type { ProjectTarget } from './project-settings.params';
import { branchTarget, codeOwnerTarget, forgetTarget, interruptedStateKey, protectionTarget, sameProtection } from './protected-branches/protected-branches.params';
import type { DeclaredIntegrations } from './integrations/integrations.schema';
import { type ProjectSettingsConfig, projectSettingsPolicy } from './project-settings.schema';
import { branchLevelName } from './protected-branches/protected-branches.schema';
import { declaredSecrets, hider, withoutSecrets } from './project-settings.secrets';

/**
 * The effects of the project_settings decisions, one per action; the executor is their only caller. Details name
 * what was changed in the policy's own words, never the forge's answer (which may echo a secret).
 *
 * Every action that changes the forge has a precondition read at the moment of acting: the action's section of the
 * project is read again and decided again (the pure decide, on that project alone), and the action goes out only if
 * the same decision comes out; otherwise it is `stale`, with what the forge shows now. The forge is shared with
 * people: what they changed since the pass read it wins over what the pass decided.
 */

// ---- the precondition: decide again on the forge as it is now ------------------------------------------------------

/** The part of a project an action is about: what its precondition reads again. */
type Section = 'protected_branches' | 'approval_settings' | 'approval_rules' | { readonly integration: IntegrationSlug };

/**
 * The policy with only `section` declared, so that reading and deciding again covers what the action rests on and
 * nothing else (one listing, not the whole project).
 */
function narrowed(config: ProjectSettingsConfig, section: Section): ProjectSettingsConfig {
  const none = { protected_branches: undefined, approvals: undefined, integrations: undefined };
  if (section === 'protected_branches') return { ...config, ...none, protected_branches: config.protected_branches };
  if (section === 'approval_settings') return { ...config, ...none, approvals: config.approvals?.settings ? { settings: config.approvals.settings } : undefined };
  if (section === 'approval_rules') return { ...config, ...none, approvals: config.approvals?.rules ? { rules: config.approvals.rules } : undefined };
  const { integration: slug } = section;
  // The one slug (undefined when no longer declared: then prune's list read still shows whether it is active).
  const integrations = config.integrations ? ({ [slug]: config.integrations[slug] } as DeclaredIntegrations) : undefined;
  return { ...config, ...none, integrations };
}

/** What an action is about, for its stale reason: the subject of its key, related subjects, and the forge now. */
interface Subject {
  /** The subject of the action's own key (`branch:main`). */
  readonly what: string;
  /** Subjects whose decisions are about the same thing (an approval rule by name and by id). */
  readonly related: readonly string[];
  /** What the forge shows now, for people: `main is protected with push maintainer, merge developer now`. */
  readonly now: string;
  /** Whether the file still declares it (a prune's subject is not declared). */
  readonly declared: boolean;
}

/**
 * Undefined while deciding again on the project's section as the forge has it now gives the same decision (subject,
 * action and params); else what changed. A NotFoundError (the project is gone) reaches the executor: `gone`.
 */
async function decidedAgain(
  context: PolicyContext,
  target: ProjectTarget,
  section: Section,
  action: string,
  params: ActionParams,
  subject: (config: ProjectSettingsConfig, snapshot: ProjectSettingsProjectSnapshot) => Subject,
): Promise<string | undefined> {
  const config = configOf<ProjectSettingsConfig>(context, projectSettingsPolicy);
  const policy = narrowed(config, section);
  const snapshot = await observeProject(policy, target.source, context, target.project);
  const decisions = decideProjectSettings(policy, { projects: [snapshot] }, context.now);
  const about = subject(config, snapshot);
  const wanted = JSON.stringify(params);
  if (decisions.some((decision) => decision.action === action && subjectOf(decision.key) === about.what && JSON.stringify(decision.params) === wanted)) {
    return undefined;
  }
  const other = decisions.find((decision) => decision.action !== SKIP && about.related.includes(subjectOf(decision.key)));
  if (other) return `${about.now}; decided again: ${other.reason}`;
  return `${about.now}${about.declared ? ', as declared' : ''}`;
}

/** An action's params as read (typed) and as decided (raw JSON, which the precondition compares with the decision again). */
interface Read<Target> {
  readonly target: Target;
  readonly params: ActionParams;
}

/**
 * An action whose precondition is deciding again (see decidedAgain). `guard` wraps the precondition's reads, so that
 * set_integration's never show a secret an answer may echo.
 */
function checkedAction<Target extends ProjectTarget>(spec: {
  readonly action: string;
  readonly read: (params: ActionParams) => Target;
  readonly section: (target: Target) => Section;
  readonly subject: (target: Target, config: ProjectSettingsConfig, snapshot: ProjectSettingsProjectSnapshot) => Subject;
  readonly run: (target: Target, context: PolicyContext) => Promise<ActionResult>;
  readonly guard?: (context: PolicyContext, check: () => Promise<string | undefined>) => Promise<string | undefined>;
}): PolicyAction {
  const guard = spec.guard ?? ((_context, check) => check());
  return defineAction<Read<Target>>({
    read: (params) => ({ target: spec.read(params), params }),
    precondition: ({ target, params }, context) =>
      guard(context, () => decidedAgain(context, target, spec.section(target), spec.action, params, (config, snapshot) => spec.subject(target, config, snapshot))),
    run: ({ target }, context) => spec.run(target, context),
  });
}

const SECTION_UNREADABLE = 'cannot be read now (the forge answered 404 or 403)';

function branchSubject(name: string) {
  return (config: ProjectSettingsConfig, snapshot: ProjectSettingsProjectSnapshot): Subject => {
    const found = snapshot.protectedBranches?.find((branch) => branch.name === name);
    return {
      what: SUBJECTS.branch(name),
      related: [SUBJECTS.branch(name)],
      now: found ? `${name} is protected with ${protectionText(found)} now` : `${name} is not protected now`,
      declared: config.protected_branches?.some((branch) => branch.name === name) ?? false,
    };
  };
}

function ruleText(rule: NonNullable<ProjectSettingsProjectSnapshot['approvalRules']>[number]): string {
  const ids = (list: readonly { id: number }[]) => `[${list.map((entry) => entry.id).join(', ')}]`;
  return `approval rule ${rule.name} (rule ${rule.id}) requires ${rule.approvals_required}, users ${ids(rule.users)}, groups ${ids(rule.groups)} now`;
}

/** A rule by id (edit, delete) or by name (create), as the forge has it now. */
function ruleSubject(rule: { readonly id?: number; readonly name: string }) {
  return (config: ProjectSettingsConfig, snapshot: ProjectSettingsProjectSnapshot): Subject => {
    const declared = config.approvals?.rules?.some((declaredRule) => declaredRule.name === rule.name) ?? false;
    const what = SUBJECTS.rule(rule.id ?? rule.name);
    const rules = snapshot.approvalRules;
    if (!rules) return { what, related: [what], now: `approval rules ${SECTION_UNREADABLE}`, declared };
    if (rule.id !== undefined) {
      const found = rules.find((candidate) => candidate.id === rule.id);
      return { what, related: [what], now: found ? ruleText(found) : `approval rule ${rule.name} (rule ${rule.id}) is gone`, declared };
    }
    const named = rules.filter((candidate) => candidate.name === rule.name);
    const now = named.length > 0 ? `approval rule ${rule.name} exists now (rule ${named.map((found) => found.id).join(', ')})` : `approval rule ${rule.name} is still missing`;
    return { what, related: [what, ...named.map((found) => SUBJECTS.rule(found.id))], now, declared };
  };
}

function integrationSubject(slug: IntegrationSlug) {
  return (config: ProjectSettingsConfig, snapshot: ProjectSettingsProjectSnapshot): Subject => {
    const what = SUBJECTS.integration(slug);
    const observed = snapshot.integrations?.[slug];
    // The state only, never a parameter: a secret is never part of a reason.
    const now = !snapshot.integrations
      ? `integrations ${SECTION_UNREADABLE}`
      : observed
        ? `${slug} is set${observed.active ? '' : ' but inactive'} now`
        : `${slug} is not set now`;
    return { what, related: [what], now, declared: config.integrations?.[slug] !== undefined };
  };
}

// ---- protected branches ---------------------------------------------------------------------------------------------

/**
 * Protects a branch. The client sends it again after a 5xx or a lost answer (a second protection of the same name is
 * refused with 409, so a repeat makes no second one): an unprotected declared branch is what this policy repairs
 * first. A 409 means the branch is protected already: by someone, or by an attempt whose answer was lost. A refusal
 * (403, 400/422) reaches the executor, which parks it.
 */
async function protect(context: PolicyContext, project: number, protection: ProtectBranchParams): Promise<'protected' | 'already'> {
  try {
    await context.client.protectedBranches.protect(project, protection);
    return 'protected';
  } catch (error) {
    if (error instanceof ConflictError) return 'already';
    throw error;
  }
}

const ALLOWED_LISTS = ['allowed_to_push', 'allowed_to_merge', 'allowed_to_unprotect'] as const;

function allowedOf(protection: ProtectBranchParams): ProtectedBranchAllowedTo[] {
  return ALLOWED_LISTS.flatMap((list) => protection[list] ?? []);
}

function levels(protection: ProtectBranchParams): string {
  const named = (level: number | undefined) => (level === undefined ? 'maintainer' : branchLevelName(level));
  const who = [...new Set(allowedOf(protection).flatMap((entry) => ('access_level' in entry ? [] : [entityText(entry)])))];
  return `push ${named(protection.push_access_level)}, merge ${named(protection.merge_access_level)}${who.length > 0 ? `, with ${who.join(', ')}` : ''}`;
}

/** Whether the forge knows the user or group now; a 404 is no, anything else but an answer is thrown. */
async function exists(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

/**
 * The protection without the users and groups the forge no longer knows, read now: an interrupted reprotect's record
 * may name an account deleted since, which the forge would refuse (422) every pass while the branch stays
 * unprotected. Says who was left out and why.
 */
async function withExistingOnly(context: PolicyContext, protection: ProtectBranchParams): Promise<{ protection: ProtectBranchParams; leftOut: string[] }> {
  const allowed = allowedOf(protection);
  const users = [...new Set(allowed.flatMap((entry) => ('user_id' in entry ? [entry.user_id] : [])))];
  const groups = [...new Set(allowed.flatMap((entry) => ('group_id' in entry ? [entry.group_id] : [])))];
  const goneUsers = new Set<number>();
  const goneGroups = new Set<number>();
  for (const id of users) if (!(await exists(() => context.client.users.show(id)))) goneUsers.add(id);
  for (const id of groups) if (!(await exists(() => context.client.groups.show(id, { with_projects: false })))) goneGroups.add(id);
  if (goneUsers.size + goneGroups.size === 0) return { protection, leftOut: [] };
  const keep = (entry: ProtectedBranchAllowedTo) => !('user_id' in entry && goneUsers.has(entry.user_id)) && !('group_id' in entry && goneGroups.has(entry.group_id));
  const kept: ProtectBranchParams = { ...protection };
  for (const list of ALLOWED_LISTS) {
    const entries = protection[list]?.filter(keep);
    if (entries && entries.length > 0) kept[list] = entries;
    else delete kept[list];
  }
  const leftOut = [
    ...[...goneUsers].map((id) => `user ${id} (the forge no longer knows this user: deleted)`),
    ...[...goneGroups].map((id) => `group ${id} (the forge does not show this group: deleted, or out of the token's sight)`),
  ];
  return { protection: kept, leftOut };
}

/** The protection with roles only: the declared levels and options, no users or groups. */
function rolesOnly(protection: ProtectBranchParams): ProtectBranchParams {
  const roles: ProtectBranchParams = { ...protection };
  for (const list of ALLOWED_LISTS) delete roles[list];
  return roles;
}

/**
 * Keeps (protection given) or forgets (undefined) what a reprotect removed and could not put back, so that the
 * protect of the next pass restores it whole, not only what the policy declares.
 */
async function rememberInterrupted(context: PolicyContext, project: number, name: string, protection: ProtectBranchParams | undefined): Promise<void> {
  const key = interruptedStateKey(project);
  const kept = readJsonObject(await context.state.get(key)) ?? {};
  if (protection === undefined && !(name in kept)) return;
  const { [name]: _forgotten, ...others } = kept;
  const next = protection === undefined ? others : { ...others, [name]: protection };
  await context.state.set(key, JSON.stringify(next));
}

/**
 * Only while the branch is still unprotected and still declared as decided (and, after an interrupted reprotect, its
 * record unchanged). What an interrupted reprotect kept is restored with the users and groups that still exist; if
 * the forge still refuses them (a user no longer a member: 400/422), the branch is protected with its roles alone
 * rather than left unprotected, and the detail names who was left out.
 */
const protectBranch = checkedAction({
  action: PROTECT_BRANCH,
  read: protectionTarget,
  section: () => 'protected_branches',
  subject: (target, config, snapshot) => branchSubject(target.protection.name)(config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    const { project, protection: decided } = target;
    const existing = await withExistingOnly(context, decided);
    let sent = existing.protection;
    const leftOut = [...existing.leftOut];
    let outcome: 'protected' | 'already';
    try {
      outcome = await protect(context, project, sent);
    } catch (error) {
      if (!(error instanceof ValidationError) || allowedOf(sent).length === 0) throw error;
      const refused = [...new Set(allowedOf(sent).flatMap((entry) => ('access_level' in entry ? [] : [entityText(entry)])))];
      context.logger.warn(`project ${project}: the forge refused ${decided.name} with ${refused.join(', ')} (${error.summary}); protecting it with its roles alone`);
      sent = rolesOnly(sent);
      outcome = await protect(context, project, sent);
      leftOut.push(`${refused.join(', ')} (the forge refused them: ${error.message})`);
    }
    await rememberInterrupted(context, project, decided.name, undefined);
    if (outcome === 'already') return { detail: `${decided.name} already protected` };
    return { detail: `protected ${decided.name} (${levels(sent)})${leftOut.length > 0 ? `; left out ${leftOut.join(', ')}` : ''}` };
  },
});

/**
 * The forge changes a protection's levels only by unprotecting and protecting again (spec 02 §4). Sent only while
 * the protection is still as the pass read it (same levels, users and groups), so nothing a person changed meanwhile
 * is unprotected and lost. A protect that fails twice leaves the branch unprotected: the error is thrown (a refusal
 * keeps its class, for the executor to park it), and the next pass sees the branch unprotected and protects it before
 * anything else.
 */
const reprotectBranch = checkedAction({
  action: REPROTECT_BRANCH,
  read: protectionTarget,
  section: () => 'protected_branches',
  subject: (target, config, snapshot) => branchSubject(target.protection.name)(config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    const { project, protection } = target;
    try {
      await context.client.protectedBranches.unprotect(project, protection.name);
    } catch (error) {
      // Unprotected already (by someone, or by an attempt whose answer was lost): the protect below is what is left.
      if (!(error instanceof NotFoundError)) throw error;
    }
    try {
      const outcome = await protect(context, project, protection);
      if (outcome === 'already') return { detail: `${protection.name} was protected again by someone else meanwhile; the next pass compares it` };
    } catch (error) {
      await rememberInterrupted(context, project, protection.name, protection);
      context.logger.error(`project ${project}: ${protection.name} is unprotected after a failed reprotect; the next pass protects it first`);
      throw error;
    }
    await rememberInterrupted(context, project, protection.name, undefined);
    return { detail: `reprotected ${protection.name} (${levels(protection)})` };
  },
});

const editProtectedBranch = checkedAction({
  action: EDIT_PROTECTED_BRANCH,
  read: codeOwnerTarget,
  section: () => 'protected_branches',
  subject: (target, config, snapshot) => branchSubject(target.name)(config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.protectedBranches.edit(target.project, target.name, { code_owner_approval_required: target.codeOwnerApprovalRequired });
    return { detail: `${target.name}: code_owner_approval_required ${target.codeOwnerApprovalRequired}` };
  },
});

/** Only while the branch is still protected and still not declared. A 404 (unprotected already) is the executor's `gone`. */
const unprotectBranch = checkedAction({
  action: UNPROTECT_BRANCH,
  read: branchTarget,
  section: () => 'protected_branches',
  subject: (target, config, snapshot) => branchSubject(target.name)(config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.protectedBranches.unprotect(target.project, target.name);
    return { detail: `unprotected ${target.name}` };
  },
});

/**
 * Drops an interrupted reprotect's record (see FORGET_INTERRUPTED), unless it changed since the pass read it (a newer
 * reprotect interrupted meanwhile, which the next pass needs).
 */
const forgetInterrupted = defineAction({
  read: forgetTarget,
  unchecked: "changes only the policy's own record in Redis (what an interrupted reprotect removed), never the forge; it is decided on the forge as this pass read it, and dropping it can only restore less",
  run: async (target, context): Promise<ActionResult> => {
    const kept = readJsonObject(await context.state.get(interruptedStateKey(target.project))) ?? {};
    if (!(target.name in kept)) return { detail: `nothing kept about ${target.name} any more` };
    if (!sameProtection(kept[target.name], target.kept)) {
      return { outcome: 'stale', detail: `the record of ${target.name} changed since the pass read it (a newer interrupted reprotect); kept` };
    }
    await rememberInterrupted(context, target.project, target.name, undefined);
    return { detail: `forgot the interrupted reprotect of ${target.name}` };
  },
});

// ---- approvals ------------------------------------------------------------------------------------------------------

/** Only while the settings that differed still differ as decided (a person may have set them meanwhile). */
const editApprovalSettings = checkedAction({
  action: EDIT_APPROVAL_SETTINGS,
  read: settingsTarget,
  section: () => 'approval_settings',
  subject: (target, config, snapshot): Subject => {
    const seen = snapshot.approvalSettings;
    const names = Object.keys(target.settings) as (keyof NonNullable<typeof seen>)[];
    const now = seen ? `${names.map((name) => `${name} ${String(seen[name])}`).join(', ')} now` : `approval settings ${SECTION_UNREADABLE}`;
    return { what: SUBJECTS.settings, related: [SUBJECTS.settings], now, declared: config.approvals?.settings !== undefined };
  },
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalSettings.edit(target.project, target.settings);
    return { detail: `set ${Object.keys(target.settings).join(', ')}` };
  },
});

/**
 * Only while no rule of that name exists. A POST creates a second rule of the same name when the first answer was
 * lost (the forge refuses duplicates, but a forge that does not would be left with two): the name is looked up
 * again right before the POST.
 */
const createApprovalRule = checkedAction({
  action: CREATE_APPROVAL_RULE,
  read: createRuleTarget,
  section: () => 'approval_rules',
  subject: (target, config, snapshot) => ruleSubject({ name: target.rule.name })(config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    for await (const rule of context.client.projectApprovalRules.all(target.project)) {
      if (rule.name === target.rule.name) return { detail: `approval rule ${target.rule.name} already there (rule ${rule.id})` };
    }
    const created = await context.client.projectApprovalRules.create(target.project, target.rule);
    return { detail: `created approval rule ${target.rule.name} (rule ${created.id})` };
  },
});

/** Only while the rule is still as the pass read it (its approvals, users and groups). */
const editApprovalRule = checkedAction({
  action: EDIT_APPROVAL_RULE,
  read: editRuleTarget,
  section: () => 'approval_rules',
  subject: (target, config, snapshot) => ruleSubject({ id: target.ruleId, name: target.rule.name })(config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalRules.edit(target.project, target.ruleId, target.rule);
    return { detail: `updated approval rule ${target.rule.name} (rule ${target.ruleId})` };
  },
});

/** Only while the rule is still there and still not declared (or still a second rule of a declared name). */
const deleteApprovalRule = checkedAction({
  action: DELETE_APPROVAL_RULE,
  read: deleteRuleTarget,
  section: () => 'approval_rules',
  subject: (target, config, snapshot) => ruleSubject({ id: target.ruleId, name: target.name })(config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalRules.remove(target.project, target.ruleId);
    return { detail: `deleted approval rule ${target.name} (rule ${target.ruleId})` };
  },
});

// ---- integrations ---------------------------------------------------------------------------------------------------

/** A precondition of an integration: its reads and its reason never show a secret. */
async function secretSafe(context: PolicyContext, check: () => Promise<string | undefined>): Promise<string | undefined> {
  const secrets = declaredSecrets(configOf<ProjectSettingsConfig>(context, projectSettingsPolicy));
  try {
    const changed = await check();
    return changed === undefined ? undefined : hider(secrets)(changed);
  } catch (error) {
    throw withoutSecrets(error, secrets);
  }
}

/** Only while deciding again on the integration as the forge has it now still sets the same values. */
const setIntegration = checkedAction({
  action: SET_INTEGRATION,
  read: setIntegrationTarget,
  section: (target) => ({ integration: target.slug }),
  subject: (target, config, snapshot) => integrationSubject(target.slug)(config, snapshot),
  guard: secretSafe,
  run: async (target, context): Promise<ActionResult> => {
    const config = configOf<ProjectSettingsConfig>(context, projectSettingsPolicy);
    const { body, fingerprints } = integrationRequest(config, target);
    const secrets = [...declaredSecrets(config), ...target.secrets.flatMap((name) => (typeof body[name] === 'string' ? [body[name]] : []))];
    try {
      // The body is the declared parameters of this slug, checked against the client's table when the file was loaded.
      await context.client.integrations.edit(target.project, target.slug, body as unknown as IntegrationParamsBySlug[typeof target.slug]);
    } catch (error) {
      throw withoutSecrets(error, secrets);
    }
    // Only once the forge has taken them: a fingerprint kept for a value never set would hide the drift for good.
    const key = fingerprintStateKey(target.project);
    const kept = readJsonObject(await context.state.get(key)) ?? {};
    await context.state.set(key, JSON.stringify({ ...kept, ...fingerprints }));
    const names = Object.keys(body).filter((name) => name !== 'active');
    return { detail: `set ${target.slug}: ${names.map((name) => (target.secrets.includes(name) ? `${name} (secret)` : name)).join(', ')}` };
  },
});

/** Only while it is still active and still not declared. A 404 (not set any more) is the executor's `gone`. */
const disableIntegration = checkedAction({
  action: DISABLE_INTEGRATION,
  read: integrationTarget,
  section: (target) => ({ integration: target.slug }),
  subject: (target, config, snapshot) => integrationSubject(target.slug)(config, snapshot),
  guard: secretSafe,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.integrations.remove(target.project, target.slug);
    return { detail: `removed ${target.slug}` };
  },
});

export const projectSettingsActions: Readonly<Record<string, PolicyAction>> = {
  [PROTECT_BRANCH]: protectBranch,
  [REPROTECT_BRANCH]: reprotectBranch,
  [EDIT_PROTECTED_BRANCH]: editProtectedBranch,
  [UNPROTECT_BRANCH]: unprotectBranch,
  [FORGET_INTERRUPTED]: forgetInterrupted,
  [EDIT_APPROVAL_SETTINGS]: editApprovalSettings,
  [CREATE_APPROVAL_RULE]: createApprovalRule,
  [EDIT_APPROVAL_RULE]: editApprovalRule,
  [DELETE_APPROVAL_RULE]: deleteApprovalRule,
  [SET_INTEGRATION]: setIntegration,
  [DISABLE_INTEGRATION]: disableIntegration,
};
