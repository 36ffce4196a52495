import { groupTransferOf } from './group-transfer-state';
import { integrationsOf } from './integrations-state';
import { projectTransferOf } from './project-transfer-state';
import type {
  BranchAccessRecord,
  GroupRecord,
  ProjectRecord,
  ProtectedBranchRecord,
  SandboxState,
  SourceKind,
  UserRecord,
} from './state';
import { OWNER } from './api/access';

/**
 * Deleting projects, groups, users and memberships as a forge with delayed deletion off does: at once, and with
 * everything that hangs off them, so that no endpoint answers with a record that points at what is gone. Used by
 * the admin API (`DELETE /users/:id`) and the control API (`/__sandbox/...`).
 *
 * The logs stay as they are: the request log, webhook deliveries and `bulkDeletions` record what the forge received
 * and did, not what it holds. Pipelines, jobs and history events a deleted user started (in projects that stay) keep
 * the user's id: the forge hands them to its ghost user, the sandbox shows `user: null`.
 */

/** A project and everything of it: CI, registry, keys' links, branches, approvals, integrations, hooks, exports, people. */
export function deleteProject(state: SandboxState, project: ProjectRecord): void {
  const id = project.id;
  // First, while its jobs and pipelines still say which project they belong to.
  state.hooks.forgetProject(id);
  deleteCi(state, id);
  for (const [repositoryId, repository] of state.repositories) {
    if (repository.project_id !== id) continue;
    state.repositories.delete(repositoryId);
    state.cleanupLeases.delete(repositoryId);
  }
  for (const [keyId, key] of state.deployKeys) {
    // A deploy key goes once no project uses it any more, as when its last project removes it.
    if (key.projects.delete(id) && key.projects.size === 0) state.deployKeys.delete(keyId);
  }
  for (const [branchId, branch] of state.protectedBranches)
    if (branch.project_id === id) state.protectedBranches.delete(branchId);
  state.approvals.forgetProject(id);
  integrationsOf(state).byProject.delete(id);
  projectTransferOf(state).forgetProject(id);
  deleteIssuables(state, id);
  for (const other of state.projects.values()) {
    // An agent lives in its configuration project, so the projects it served lose it.
    other.allowed_agents = other.allowed_agents.filter((agent) => agent.config_project_id !== id);
  }
  state.projectGroupLinks.delete(id);
  state.namespaces.forgetProjectRedirects(id);
  forgetSource(state, 'project', id);
  state.projects.delete(id);
}

/** A group with its subgroups and every project in them, and whatever names the group elsewhere. */
export function deleteGroup(state: SandboxState, group: GroupRecord): void {
  const tree = state.groupTree(group);
  for (const project of state.projectsInGroupTree(group)) deleteProject(state, project);
  const transfer = groupTransferOf(state);
  for (const g of tree) {
    for (const [projectId, groupIds] of state.projectGroupLinks) {
      if (groupIds.delete(g.id) && groupIds.size === 0) state.projectGroupLinks.delete(projectId);
    }
    for (const branch of state.protectedBranches.values()) dropBranchAccess(branch, (entry) => entry.group_id === g.id);
    state.approvals.forgetGroup(g.id);
    for (const [epicId, epic] of state.epics) {
      if (epic.parent_id !== g.id) continue;
      state.epics.delete(epicId);
      deleteLabelEvents(state, 'Epic', epicId);
    }
    transfer.exports.delete(g.id);
    transfer.pendingExports.delete(g.id);
    transfer.relationExports.delete(g.id);
    forgetSource(state, 'group', g.id);
    state.groups.delete(g.id);
  }
}

/**
 * The admin API's `DELETE /users/:id`: a user who is the only direct owner of a group stays, unless `hardDelete`,
 * which deletes those groups first. False when nothing was deleted for that reason (the API answers 409).
 */
export function deleteUserAsAdministrator(state: SandboxState, user: UserRecord, hardDelete: boolean): boolean {
  const solelyOwned = soleOwnedGroups(state, user);
  if (solelyOwned.length > 0 && !hardDelete) return false;
  // A subgroup of another solely owned group may already be gone with its parent.
  for (const group of solelyOwned) if (state.groups.has(group.id)) deleteGroup(state, group);
  deleteUser(state, user);
  return true;
}

/** The forge's answer when a sole group owner is deleted without `hard_delete`. */
export const SOLE_OWNER_MESSAGE = 'User cannot be removed while is the sole-owner of a group';

/**
 * A user with their personal projects, SSH and GPG keys (and so their tokens), memberships, access requests, places in
 * protected branches and approval rules, approvals, status, preferences and follows.
 */
function deleteUser(state: SandboxState, user: UserRecord): void {
  for (const project of [...state.projects.values()]) {
    if (project.namespace_id === user.namespace_id) deleteProject(state, project);
  }
  remove(state.members, (m) => m.user_id === user.id);
  remove(state.accessRequests, (r) => r.user_id === user.id);
  for (const [id, key] of state.sshKeys) if (key.user_id === user.id) state.sshKeys.delete(id);
  for (const [id, key] of state.gpgKeys) if (key.user_id === user.id) state.gpgKeys.delete(id);
  for (const branch of state.protectedBranches.values()) dropBranchAccess(branch, (entry) => entry.user_id === user.id);
  state.approvals.forgetUser(user.id);
  state.userWrites.forget(user.id);
  state.accessOverrides.forget((o) => o.user_id === user.id);
  state.accessTokens.forgetUser(user.id);
  state.users.delete(user.id);
}

/**
 * Removes the user's direct membership of one group or project; false when there is none. Memberships inherited from
 * a parent group, and the user's direct memberships in subgroups and projects, stay: a test removes each one it means
 * (the forge's API would take the latter along unless `skip_subresources=true`).
 */
export function removeMember(state: SandboxState, source: SourceKind, sourceId: number, userId: number): boolean {
  const before = state.members.length;
  remove(state.members, (m) => m.source === source && m.source_id === sourceId && m.user_id === userId);
  return state.members.length < before;
}

function soleOwnedGroups(state: SandboxState, user: UserRecord): GroupRecord[] {
  return [...state.groups.values()].filter((group) => {
    const owners = state.members.filter(
      (m) => m.source === 'group' && m.source_id === group.id && m.access_level >= OWNER,
    );
    return owners.length === 1 && owners[0].user_id === user.id;
  });
}

function deleteCi(state: SandboxState, projectId: number): void {
  const pipelineIds = new Set<number>();
  for (const [id, pipeline] of state.pipelines) {
    if (pipeline.project_id !== projectId) continue;
    pipelineIds.add(id);
    state.pipelines.delete(id);
  }
  for (const [id, job] of state.jobs) if (job.project_id === projectId) state.jobs.delete(id);
  // Multi-project pipelines: another project's bridge or child loses its link, as the forge's pipeline source goes.
  for (const job of state.jobs.values()) {
    if (job.downstream_pipeline_id !== null && pipelineIds.has(job.downstream_pipeline_id))
      job.downstream_pipeline_id = null;
  }
  for (const pipeline of state.pipelines.values()) {
    if (pipeline.parent_pipeline_id !== null && pipelineIds.has(pipeline.parent_pipeline_id))
      pipeline.parent_pipeline_id = null;
  }
}

function deleteIssuables(state: SandboxState, projectId: number): void {
  for (const [id, issue] of state.issues) {
    if (issue.parent_id !== projectId) continue;
    state.issues.delete(id);
    deleteLabelEvents(state, 'Issue', id);
    for (const [eventId, event] of state.weightEvents) if (event.issue_id === id) state.weightEvents.delete(eventId);
  }
  for (const [id, mr] of state.mergeRequests) {
    if (mr.parent_id !== projectId) continue;
    state.mergeRequests.delete(id);
    deleteLabelEvents(state, 'MergeRequest', id);
  }
}

function deleteLabelEvents(state: SandboxState, type: 'Issue' | 'MergeRequest' | 'Epic', resourceId: number): void {
  for (const [id, event] of state.labelEvents) {
    if (event.resource_type === type && event.resource_id === resourceId) state.labelEvents.delete(id);
  }
}

/**
 * Members, access requests, access overrides, CI/CD variables and deploy tokens of a project or group, and the bot
 * users of its access tokens with their tokens (the forge deletes those with it).
 */
function forgetSource(state: SandboxState, source: SourceKind, sourceId: number): void {
  for (const botId of state.accessTokens.botsOf(source, sourceId)) {
    state.accessTokens.forgetUser(botId);
    state.users.delete(botId);
  }
  state.ciVariables.forget(source, sourceId);
  state.deployTokens.forget(source, sourceId);
  remove(state.members, (m) => m.source === source && m.source_id === sourceId);
  remove(state.accessRequests, (r) => r.source === source && r.source_id === sourceId);
  state.accessOverrides.forget((o) => o.source === source && o.source_id === sourceId);
}

/** The entries naming a deleted user or group leave the branch's push, merge and unprotect lists. */
function dropBranchAccess(branch: ProtectedBranchRecord, names: (entry: BranchAccessRecord) => boolean): void {
  branch.push_access_levels = branch.push_access_levels.filter((entry) => !names(entry));
  branch.merge_access_levels = branch.merge_access_levels.filter((entry) => !names(entry));
  branch.unprotect_access_levels = branch.unprotect_access_levels.filter((entry) => !names(entry));
}

function remove<T>(list: T[], matches: (item: T) => boolean): void {
  for (let i = list.length - 1; i >= 0; i--) if (matches(list[i])) list.splice(i, 1);
}
