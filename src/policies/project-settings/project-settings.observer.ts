import type { ProjectRef } from '../../config/validators';
import { selectProjects } from '../../engine/discovery';
import { mapTargets } from '../../engine/map-limited';
import type { PolicyContext } from '../../engine/policy';
import { readJsonObject } from '../../engine/policy-state';
import { ForbiddenError, NotFoundError } from '../../gitlab/transport/errors';
import type { ProjectApprovalSettings } from '../../gitlab/types/approvals';
import {
  INTEGRATION_SLUGS,
  integrationParameters,
  type IntegrationListEntry,
  type IntegrationSettings,
  type IntegrationSlug,
} from '../../gitlab/types/integrations';
import type { ProtectedBranch } from '../../gitlab/types/protected-branches';
import type {
  ObservedApprovalRule,
  ObservedIntegration,
  ObservedProtectedBranch,
  ProjectSettingsProjectSnapshot,
  ProjectSettingsSnapshot,
} from './project-settings.decide';
import { type BranchProtection, fingerprintStateKey, interruptedStateKey, storedProtection } from './project-settings.params';
import type { ProjectSettingsConfig } from './project-settings.schema';

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

/**
 * The event flags the forge answers beside `properties` (spec 03 §2). The single service's answer lacks
 * `commit_events` and `confidential_note_events`: those come from the list entry.
 */
const EVENT_FLAGS = [
  'push_events',
  'issues_events',
  'confidential_issues_events',
  'merge_requests_events',
  'tag_push_events',
  'note_events',
  'pipeline_events',
  'wiki_page_events',
  'job_events',
  'comment_on_event_enabled',
] as const satisfies readonly (keyof IntegrationSettings)[];
const LIST_ONLY_FLAGS = ['commit_events', 'confidential_note_events'] as const satisfies readonly (keyof IntegrationListEntry)[];

const KNOWN_SLUGS: ReadonlySet<string> = new Set(INTEGRATION_SLUGS);

function isKnownSlug(slug: string): slug is IntegrationSlug {
  return KNOWN_SLUGS.has(slug);
}

export async function observeProjectSettings(config: ProjectSettingsConfig, context: PolicyContext): Promise<ProjectSettingsSnapshot> {
  const selected = await selectProjects(context, config.projects, config.include_archived);
  const listed = new Set(config.projects.explicit.map((item) => String(item.kind === 'id' ? item.id : item.path).toLowerCase()));
  const projects = await mapTargets(context, selected, async (project) => {
    try {
      return await observeProject(config, project, context);
    } catch (error) {
      // A project a glob found may be deleted or moved before discovery runs again: it drops out with one line. A
      // project the file names itself fails the pass, to be seen.
      if (!(error instanceof NotFoundError) || listed.has(String(project).toLowerCase())) throw error;
      context.logger.warn(`project ${project} is gone (deleted or moved since discovery); left out of this pass`);
      return undefined;
    }
  });
  return { projects: projects.filter((project): project is ProjectSettingsProjectSnapshot => project !== undefined) };
}

async function observeProject(config: ProjectSettingsConfig, project: ProjectRef, context: PolicyContext): Promise<ProjectSettingsProjectSnapshot> {
  // The numeric id keys every decision and the fingerprints; a path is resolved once (and a 404 here is the project
  // gone, never a section the forge lacks).
  const projectId = typeof project === 'number' ? project : (await context.client.projects.show(project)).id;
  const approvals = config.approvals;
  const [protectedBranches, interrupted, approvalSettings, approvalRules, integrations, fingerprints] = await Promise.all([
    config.protected_branches ? readProtectedBranches(context, projectId) : undefined,
    config.protected_branches ? readInterrupted(context, projectId) : undefined,
    approvals?.settings ? readApprovalSettings(context, projectId) : undefined,
    approvals?.rules ? readApprovalRules(context, projectId) : undefined,
    config.integrations ? readIntegrations(config, context, projectId) : undefined,
    readFingerprints(context, projectId),
  ]);
  return {
    project,
    projectId,
    ...(protectedBranches ? { protectedBranches } : {}),
    ...(interrupted && Object.keys(interrupted).length > 0 ? { interrupted } : {}),
    ...(approvalSettings ? { approvalSettings } : {}),
    ...(approvalRules ? { approvalRules } : {}),
    ...(integrations ? { integrations } : {}),
    fingerprints,
  };
}

async function readProtectedBranches(context: PolicyContext, projectId: number): Promise<ObservedProtectedBranch[]> {
  const branches: ObservedProtectedBranch[] = [];
  for await (const branch of context.client.protectedBranches.all(projectId)) branches.push(toObservedBranch(branch));
  return branches;
}

function toObservedBranch(branch: ProtectedBranch): ObservedProtectedBranch {
  // A lower tier's answer has no code_owner_approval_required: left undefined, decide reports it instead of failing.
  const codeOwner: unknown = (branch as Partial<ProtectedBranch>).code_owner_approval_required;
  return {
    name: branch.name,
    allow_force_push: branch.allow_force_push,
    push_access_levels: branch.push_access_levels ?? [],
    merge_access_levels: branch.merge_access_levels ?? [],
    unprotect_access_levels: branch.unprotect_access_levels ?? [],
    ...(typeof codeOwner === 'boolean' ? { code_owner_approval_required: codeOwner } : {}),
  };
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
    for await (const rule of context.client.projectApprovalRules.all(projectId)) {
      rules.push({
        id: rule.id,
        name: rule.name,
        rule_type: rule.rule_type,
        approvals_required: rule.approvals_required,
        contains_hidden_groups: rule.contains_hidden_groups === true,
        users: (rule.users ?? []).map((user) => ({ id: user.id })),
        groups: (rule.groups ?? []).map((group) => ({ id: group.id })),
      });
    }
    return rules;
  });
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
    observed[slug] = { active: settings.active, properties: integrationProperties(slug, settings, entries.get(slug)) };
  }
  if (config.prune) {
    for (const [slug, entry] of entries) {
      if (observed[slug] === undefined && config.integrations?.[slug] === undefined) observed[slug] = { active: entry.active, properties: {} };
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
  for (const flag of EVENT_FLAGS) if (typeof answer[flag] === 'boolean' && !Object.hasOwn(properties, flag)) properties[flag] = answer[flag];
  const listed: Record<string, unknown> = { ...entry };
  for (const flag of LIST_ONLY_FLAGS) if (typeof listed[flag] === 'boolean' && !Object.hasOwn(properties, flag)) properties[flag] = listed[flag];
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
