import { ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import { forbidden, notFound, unauthorized, type RequestContext } from '../http/context';
import type { GroupRecord, ProjectRecord, SandboxState, UserRecord } from '../state';

/**
 * Who may see and do what. The forge's full permission matrix is larger; the sandbox keeps the parts that change
 * answers: invisible projects and groups answer 404 (the forge hides their existence), visible ones with too low a
 * role answer 403, administrators may do everything. A level a test forced through `/__sandbox/access` comes first,
 * administrators included (an administrator's token whose access a person narrowed): 0 hides the project or group,
 * any other level is the caller's role there. Every endpoint and listing decides through the four functions below.
 */

// The roles the endpoints ask for, short names of ACCESS_LEVELS.
export const GUEST = ACCESS_LEVELS.guest;
export const REPORTER = ACCESS_LEVELS.reporter;
export const DEVELOPER = ACCESS_LEVELS.developer;
export const MAINTAINER = ACCESS_LEVELS.maintainer;
export const OWNER = ACCESS_LEVELS.owner;

export function currentUser(ctx: RequestContext): UserRecord {
  if (!ctx.user) throw unauthorized();
  return ctx.user;
}

export function requireAdmin(ctx: RequestContext): UserRecord {
  const user = currentUser(ctx);
  if (!user.is_admin) throw forbidden();
  return user;
}

export function projectLevel(state: SandboxState, user: UserRecord, project: ProjectRecord): number {
  const forced = state.accessOverride(user, 'project', project.id);
  if (forced !== undefined) return forced;
  return user.is_admin ? OWNER : state.projectAccessLevel(user, project);
}

export function groupLevel(state: SandboxState, user: UserRecord, group: GroupRecord): number {
  const forced = state.accessOverride(user, 'group', group.id);
  if (forced !== undefined) return forced;
  return user.is_admin ? OWNER : state.groupAccessLevel(user, group);
}

export function canSeeProject(state: SandboxState, user: UserRecord, project: ProjectRecord): boolean {
  const forced = state.accessOverride(user, 'project', project.id);
  if (forced !== undefined) return forced >= GUEST;
  if (user.is_admin || project.visibility === 'public') return true;
  if (project.visibility === 'internal' && !user.external) return true;
  return state.projectAccessLevel(user, project) >= GUEST;
}

export function canSeeGroup(state: SandboxState, user: UserRecord, group: GroupRecord): boolean {
  const forced = state.accessOverride(user, 'group', group.id);
  if (forced !== undefined) return forced >= GUEST;
  if (user.is_admin || group.visibility === 'public') return true;
  if (group.visibility === 'internal' && !user.external) return true;
  if (state.groupAccessLevel(user, group) >= GUEST) return true;
  // A member of something inside the group can see the group, as on the forge.
  return state.projectsInGroupTree(group).some((p) => state.projectAccessLevel(user, p) >= GUEST);
}

/**
 * The project named by `:id` (id or URL-encoded path, an old path of a moved or renamed project too, as the forge's
 * `find_project` follows redirect routes), visible to the caller and with at least `minLevel`.
 */
export function findProject(ctx: RequestContext, minLevel = 0, paramName = 'id'): ProjectRecord {
  const user = currentUser(ctx);
  const project = ctx.state.project(ctx.params[paramName] ?? '', { followRedirects: true });
  if (!project || !canSeeProject(ctx.state, user, project)) throw notFound('Project');
  if (projectLevel(ctx.state, user, project) < minLevel) throw forbidden();
  return project;
}

export function findGroup(ctx: RequestContext, minLevel = 0, paramName = 'id'): GroupRecord {
  const user = currentUser(ctx);
  const group = ctx.state.group(ctx.params[paramName] ?? '');
  if (!group || !canSeeGroup(ctx.state, user, group)) throw notFound('Group');
  if (groupLevel(ctx.state, user, group) < minLevel) throw forbidden();
  return group;
}

/**
 * An archived project is read-only: the forge's project policy takes every write ability of its CI and container
 * registry away, whatever the caller's role, and answers `403 Forbidden` like a missing role.
 */
export function requireUnarchived(project: ProjectRecord): void {
  if (project.archived) throw forbidden();
}
