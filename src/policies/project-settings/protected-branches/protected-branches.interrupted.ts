import { readJsonObject } from '../../../engine/json';
import type { StepContext } from '../../../engine/policy';
import { NotFoundError } from '../../../gitlab/transport/errors';
import type { ProtectBranchParams, ProtectedBranchAllowedTo } from '../../../gitlab/types/protected-branches';
import { INTERRUPTED_INDEX_KEY, interruptedStateKey } from './protected-branches.params';

/** A reprotect cut between its unprotect and its protect: the record of what it removed, and putting that back. */

const ALLOWED_LISTS = ['allowed_to_push', 'allowed_to_merge', 'allowed_to_unprotect'] as const;

/** The users and groups a protection allows, over its three lists. */
export function allowedOf(protection: ProtectBranchParams): ProtectedBranchAllowedTo[] {
  return ALLOWED_LISTS.flatMap((list) => protection[list] ?? []);
}

/** A project's records as kept in the policy's state, by branch name, unread (storedProtection reads one). */
export async function interruptedRecords(context: StepContext, project: number): Promise<Record<string, unknown>> {
  return readJsonObject(await context.state.get(interruptedStateKey(project))) ?? {};
}

/** Keeps (protection given) or forgets (undefined) what a reprotect removed and could not put back. */
export async function rememberInterrupted(
  context: StepContext,
  project: number,
  name: string,
  protection: ProtectBranchParams | undefined,
): Promise<void> {
  const kept = await interruptedRecords(context, project);
  if (protection === undefined && !(name in kept)) return;
  const { [name]: _forgotten, ...others } = kept;
  const next = protection === undefined ? others : { ...others, [name]: protection };
  // Listed before the record is written, so no record is ever out of the index's reach.
  if (Object.keys(next).length > 0) await listProject(context, project, true);
  await context.state.set(interruptedStateKey(project), JSON.stringify(next));
  if (Object.keys(next).length === 0) await listProject(context, project, false);
}

/** The projects that have records of interrupted reprotects (see INTERRUPTED_INDEX_KEY). */
export async function recordedProjects(context: StepContext): Promise<number[]> {
  const stored: unknown = readJsonObject(await context.state.get(INTERRUPTED_INDEX_KEY))?.projects;
  return Array.isArray(stored) ? stored.filter((id): id is number => Number.isInteger(id)) : [];
}

async function listProject(context: StepContext, project: number, listed: boolean): Promise<void> {
  const ids = new Set(await recordedProjects(context));
  if (ids.has(project) === listed) return;
  if (listed) ids.add(project);
  else ids.delete(project);
  await context.state.set(INTERRUPTED_INDEX_KEY, JSON.stringify({ projects: [...ids].sort((a, b) => a - b) }));
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
 * The protection without the users and groups the forge no longer knows: a record may name an account deleted since,
 * which the forge would refuse (422) every pass while the branch stays unprotected. Says who was left out and why.
 */
export async function withExistingOnly(
  context: StepContext,
  protection: ProtectBranchParams,
): Promise<{ protection: ProtectBranchParams; leftOut: string[] }> {
  const allowed = allowedOf(protection);
  const users = [...new Set(allowed.flatMap((entry) => ('user_id' in entry ? [entry.user_id] : [])))];
  const groups = [...new Set(allowed.flatMap((entry) => ('group_id' in entry ? [entry.group_id] : [])))];
  const goneUsers = new Set<number>();
  const goneGroups = new Set<number>();
  for (const id of users) if (!(await exists(() => context.client.users.show(id)))) goneUsers.add(id);
  for (const id of groups)
    if (!(await exists(() => context.client.groups.show(id, { with_projects: false })))) goneGroups.add(id);
  if (goneUsers.size + goneGroups.size === 0) return { protection, leftOut: [] };
  const keep = (entry: ProtectedBranchAllowedTo) =>
    !('user_id' in entry && goneUsers.has(entry.user_id)) && !('group_id' in entry && goneGroups.has(entry.group_id));
  const kept: ProtectBranchParams = { ...protection };
  for (const list of ALLOWED_LISTS) {
    const entries = protection[list]?.filter(keep);
    if (entries && entries.length > 0) kept[list] = entries;
    else delete kept[list];
  }
  const leftOut = [
    ...[...goneUsers].map((id) => `user ${id} (the forge no longer knows this user: deleted)`),
    ...[...goneGroups].map(
      (id) => `group ${id} (the forge does not show this group: deleted, or out of the token's sight)`,
    ),
  ];
  return { protection: kept, leftOut };
}

/** The protection with roles only: the declared levels and options, no users or groups. */
export function rolesOnly(protection: ProtectBranchParams): ProtectBranchParams {
  const roles: ProtectBranchParams = { ...protection };
  for (const list of ALLOWED_LISTS) delete roles[list];
  return roles;
}
