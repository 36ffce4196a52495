import type { ProjectRef } from '../../config/validators';
import { selectProjects } from '../../engine/discovery';
import { observeTargets } from '../../engine/observe-targets';
import type { PolicyContext } from '../../engine/policy';
import { readJsonObject } from '../../engine/json';
import { parkedDecisions } from '../../engine/refusals';
import { ApiError, ForbiddenError, NotFoundError, UnexpectedAnswerError } from '../../gitlab/transport/errors';
import type { ProjectApprovalSettings } from '../../gitlab/types/approvals';
import {
  INTEGRATION_SETTINGS_EVENT_FLAGS,
  INTEGRATION_SLUGS,
  integrationParameters,
  LIST_ONLY_INTEGRATION_EVENT_FLAGS,
  type IntegrationListEntry,
  type IntegrationSettings,
  type IntegrationSlug,
} from '../../gitlab/types/integrations';
import type { ProtectedBranchAccess } from '../../gitlab/types/protected-branches';
import type {
  ObservedApprovalRule,
  ObservedIntegration,
  ObservedProtectedBranch,
  ProjectSettingsProjectSnapshot,
  ProjectSettingsSnapshot,
} from './project-settings.decide';
import { fingerprintStateKey } from './integrations/integrations.params';
import { type BranchProtection, interruptedStateKey, storedProtection } from './protected-branches/protected-branches.params';
import type { ProjectSettingsConfig } from './project-settings.schema';
import { declaredSecrets, withoutSecrets } from './project-settings.secrets';

/**
 * Reading what the project_settings decisions need, section by section and only for the sections the policy declares:
 * every protection of a project (prune needs the undeclared ones too), the approval settings and rules, the declared
 * integrations one by one (and, for prune, the active ones), and the fingerprints of what this policy last set.
 */

const APPROVAL_SETTINGS = [
  'approvals_before_merge',
  'reset_approvals_on_push',
  'disable_overriding_approvers_per_merge_request',
  'merge_requests_author_approval',
  'merge_requests_disable_committers_approval',
  'require_password_to_approve',
] as const satisfies readonly (keyof ProjectApprovalSettings)[];

const KNOWN_SLUGS: ReadonlySet<string> = new Set(INTEGRATION_SLUGS);

function isKnownSlug(slug: string): slug is IntegrationSlug {
  return KNOWN_SLUGS.has(slug);
}

export async function observeProjectSettings(config: ProjectSettingsConfig, context: PolicyContext): Promise<ProjectSettingsSnapshot> {
  const selected = await selectProjects(context, config.projects, config.include_archived);
  // Each project on its own: one the token may not read (403), one the file names that is gone (404), one answered
  // oddly, is recorded against that project and the others are decided and acted on (the pass ends partial). One a
  // glob found that is gone since discovery drops out with one line.
  const projects = await observeTargets(
    context,
    selected,
    (project) => ({ target: `project ${project}`, listed: config.projects.names(project) }),
    (project) => observeProject(config, project, context),
  );
  return { projects: projects.filter((project): project is ProjectSettingsProjectSnapshot => project !== undefined) };
}

/**
 * One project's declared sections as the forge has them now, with what the policy keeps about it. Also what an
 * action's precondition reads again just before acting (with `config` narrowed to the action's section, and the
 * numeric id it already knows): the same reading as the pass's, so deciding again on it is deciding as the pass did.
 */
export async function observeProject(
  config: ProjectSettingsConfig,
  project: ProjectRef,
  context: PolicyContext,
  knownId?: number,
): Promise<ProjectSettingsProjectSnapshot> {
  // The numeric id keys every decision and the fingerprints; a path is resolved once (and a 404 here is the project
  // gone, never a section the forge lacks).
  const projectId = knownId ?? (typeof project === 'number' ? project : (await context.client.projects.show(project)).id);
  const approvals = config.approvals;
  const [protectedBranches, interrupted, approvalSettings, approvalRules, integrations, fingerprints] = await Promise.all([
    config.protected_branches ? readProtectedBranches(context, projectId) : undefined,
    config.protected_branches ? readInterrupted(context, projectId) : undefined,
    approvals?.settings ? readApprovalSettings(context, projectId) : undefined,
    approvals?.rules ? readApprovalRules(context, projectId) : undefined,
    config.integrations ? readIntegrations(config, context, projectId) : undefined,
    readFingerprints(context, projectId),
  ]).catch((error: unknown) => {
    // The forge's answer becomes the reason this project was not read, shown by plan and once and logged: an answer
    // that quotes a declared secret must not bring it there, as the actions' answers do not.
    throw error instanceof ApiError ? withoutSecrets(error, declaredSecrets(config)) : error;
  });
  // The decisions about this project the engine keeps parked after a final refusal (see the snapshot's `parked`).
  const parked = parkedDecisions(context.unsettled).filter((decision) => decision.params.project === projectId);
  return {
    project,
    projectId,
    ...(protectedBranches ? { protectedBranches } : {}),
    ...(interrupted && Object.keys(interrupted).length > 0 ? { interrupted } : {}),
    ...(approvalSettings ? { approvalSettings } : {}),
    ...(approvalRules ? { approvalRules } : {}),
    ...(integrations ? { integrations } : {}),
    fingerprints,
    ...(parked.length > 0 ? { parked } : {}),
  };
}

async function readProtectedBranches(context: PolicyContext, projectId: number): Promise<ObservedProtectedBranch[]> {
  const branches: ObservedProtectedBranch[] = [];
  for await (const branch of context.client.protectedBranches.all(projectId)) branches.push(toObservedBranch(branch, branches.length, projectId));
  return branches;
}

/**
 * A protection as decide compares it. A field the comparison rests on that the answer lacks, or gives in another
 * shape, is an unexpected answer for this project (recorded against it, the others go on), never a difference: read
 * as an empty list, a missing `push_access_levels` would be "push none → maintainer", and the bot would unprotect and
 * protect again a branch that is as declared.
 */
function toObservedBranch(answer: unknown, item: number, projectId: number): ObservedProtectedBranch {
  const odd = (field: string, problem: string) => oddAnswer(`projects/${projectId}/protected_branches`, item, field, problem);
  if (typeof answer !== 'object' || answer === null) throw odd('', 'is not a protection');
  const branch = answer as Record<string, unknown>;
  if (typeof branch.name !== 'string') throw odd('name', describe(branch.name));
  if (typeof branch.allow_force_push !== 'boolean') throw odd('allow_force_push', describe(branch.allow_force_push));
  const list = (field: 'push_access_levels' | 'merge_access_levels' | 'unprotect_access_levels'): ProtectedBranchAccess[] => {
    const entries = branch[field];
    if (!Array.isArray(entries)) throw odd(field, describe(entries));
    entries.forEach((entry: unknown, index) => {
      const access = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).access_level : undefined;
      if (access !== null && typeof access !== 'number') throw odd(`${field}.${index}.access_level`, describe(access));
    });
    return entries as ProtectedBranchAccess[];
  };
  // A lower tier's answer has no code_owner_approval_required: left undefined, decide reports it instead of failing.
  const codeOwner = branch.code_owner_approval_required;
  return {
    name: branch.name,
    allow_force_push: branch.allow_force_push,
    push_access_levels: list('push_access_levels'),
    merge_access_levels: list('merge_access_levels'),
    unprotect_access_levels: list('unprotect_access_levels'),
    ...(typeof codeOwner === 'boolean' ? { code_owner_approval_required: codeOwner } : {}),
  };
}

/**
 * An answer read without the shape the comparison needs: the client's UnexpectedAnswerError (an ApiError), so that
 * observeTargets records it against the project and the pass goes on with the others. The answer itself is not kept
 * (an integration's may hold a secret).
 */
function oddAnswer(path: string, item: number | undefined, field: string, problem: string): UnexpectedAnswerError {
  const where = item === undefined ? '' : `item ${item}: `;
  return new UnexpectedAnswerError({
    status: 200,
    method: 'GET',
    path,
    body: undefined,
    item,
    field,
    message: `unexpected answer from GET ${path}: ${where}${field === '' ? 'the record' : field} ${problem}; not compared, nothing changed`,
  });
}

/** The numeric ids of a list of users or groups in an answer, or why there are none. */
function idsOf(list: unknown): { id: number }[] | string {
  if (!Array.isArray(list)) return describe(list);
  const ids: { id: number }[] = [];
  for (const entry of list as unknown[]) {
    const id = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).id : undefined;
    if (typeof id !== 'number') return `has an entry without a numeric id`;
    ids.push({ id });
  }
  return ids;
}

/** What an answer had instead of the expected field. */
function describe(value: unknown): string {
  if (value === undefined) return 'is missing';
  return `is ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value}`;
}

/** A forge without merge request approvals (a lower tier) answers 404 or 403: undefined, which decide reports as a skip. */
async function unlessUnavailable<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof NotFoundError || error instanceof ForbiddenError) return undefined;
    throw error;
  }
}

async function readApprovalSettings(context: PolicyContext, projectId: number): Promise<Partial<ProjectApprovalSettings> | undefined> {
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

async function readApprovalRules(context: PolicyContext, projectId: number): Promise<ObservedApprovalRule[] | undefined> {
  return unlessUnavailable(async () => {
    const rules: ObservedApprovalRule[] = [];
    for await (const answer of context.client.projectApprovalRules.all(projectId)) rules.push(toObservedRule(answer, rules.length, projectId));
    return rules;
  });
}

/**
 * A rule as decide compares it. Without its `users` or `groups` list, a rule would read as having none and be "edited"
 * to the declared ones: a missing field is an unexpected answer for the project, as with protections.
 */
function toObservedRule(answer: unknown, item: number, projectId: number): ObservedApprovalRule {
  const odd = (field: string, problem: string) => oddAnswer(`projects/${projectId}/approval_rules`, item, field, problem);
  if (typeof answer !== 'object' || answer === null) throw odd('', 'is not an approval rule');
  const rule = answer as Record<string, unknown>;
  if (typeof rule.id !== 'number') throw odd('id', describe(rule.id));
  if (typeof rule.name !== 'string') throw odd('name', describe(rule.name));
  if (typeof rule.rule_type !== 'string') throw odd('rule_type', describe(rule.rule_type));
  if (typeof rule.approvals_required !== 'number') throw odd('approvals_required', describe(rule.approvals_required));
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

/**
 * The declared integrations as the forge has them (a 404: not set), with their event flags merged into `properties`,
 * and, with prune, every active one this build knows. Secret parameters are left out of `properties`: decide never
 * compares them (it uses fingerprints), and a snapshot without them cannot leak them.
 */
async function readIntegrations(
  config: ProjectSettingsConfig,
  context: PolicyContext,
  projectId: number,
): Promise<Partial<Record<IntegrationSlug, ObservedIntegration>> | undefined> {
  const list = await unlessUnavailable(() => context.client.integrations.all(projectId));
  if (list === undefined) return undefined;
  const entries = new Map(list.flatMap((entry) => (isKnownSlug(entry.slug) ? [[entry.slug, entry] as const] : [])));
  const declared = INTEGRATION_SLUGS.filter((slug) => config.integrations?.[slug] !== undefined);
  const observed: Partial<Record<IntegrationSlug, ObservedIntegration>> = {};
  for (const slug of declared) {
    let settings: IntegrationSettings;
    try {
      settings = await context.client.integrations.show(projectId, slug);
    } catch (error) {
      if (error instanceof NotFoundError) continue; // not set
      throw error;
    }
    // Read as inactive, a missing `active` would be "inactive → active" and the integration set again every pass.
    const active: unknown = (settings as Partial<IntegrationSettings>).active;
    if (typeof active !== 'boolean') throw oddAnswer(`projects/${projectId}/services/${slug}`, undefined, 'active', describe(active));
    observed[slug] = { active, properties: integrationProperties(slug, settings, entries.get(slug)) };
  }
  if (config.prune) {
    for (const [slug, entry] of entries) {
      if (observed[slug] !== undefined || config.integrations?.[slug] !== undefined) continue;
      // Only `active` decides a prune: an entry without it is not read as inactive (kept) nor as active (disabled).
      const active: unknown = (entry as Partial<IntegrationListEntry>).active;
      if (typeof active !== 'boolean') throw oddAnswer(`projects/${projectId}/services`, list.indexOf(entry), 'active', describe(active));
      observed[slug] = { active, properties: {} };
    }
  }
  return observed;
}

function integrationProperties(slug: IntegrationSlug, settings: IntegrationSettings, entry: IntegrationListEntry | undefined): Record<string, unknown> {
  const parameters = integrationParameters(slug);
  const properties: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(settings.properties ?? {})) {
    if (parameters[name]?.secret === true) continue;
    properties[name] = value;
  }
  const answer: Record<string, unknown> = { ...settings };
  // The event flags: beside `properties` in the service's answer, the list-only ones in the list entry (spec 03 §2).
  for (const flag of INTEGRATION_SETTINGS_EVENT_FLAGS) if (typeof answer[flag] === 'boolean' && !Object.hasOwn(properties, flag)) properties[flag] = answer[flag];
  const listed: Record<string, unknown> = { ...entry };
  for (const flag of LIST_ONLY_INTEGRATION_EVENT_FLAGS) if (typeof listed[flag] === 'boolean' && !Object.hasOwn(properties, flag)) properties[flag] = listed[flag];
  return properties;
}

/** What this policy last set on the project (`slug.param` → fingerprint); none after Redis lost its data. */
async function readInterrupted(context: PolicyContext, projectId: number): Promise<Record<string, BranchProtection>> {
  const stored = readJsonObject(await context.state.get(interruptedStateKey(projectId))) ?? {};
  const protections: Record<string, BranchProtection> = {};
  for (const [name, value] of Object.entries(stored)) {
    const protection = storedProtection(value);
    if (protection) protections[name] = protection;
  }
  return protections;
}

async function readFingerprints(context: PolicyContext, projectId: number): Promise<Record<string, string>> {
  const stored = readJsonObject(await context.state.get(fingerprintStateKey(projectId))) ?? {};
  return Object.fromEntries(Object.entries(stored).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
