import { ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import {
  forbidden,
  intParam,
  intRouteParam,
  notFound,
  ok,
  param,
  paramError,
  requiredParam,
  validationError,
  type RequestContext,
} from '../http/context';
import type { Router } from '../http/router';
import type { GroupRecord, MemberRecord, SandboxState, SourceKind } from '../state';
import { currentUser, findGroup, findProject, groupLevel, MAINTAINER, OWNER, projectLevel } from './access';
import { Presenter } from './presenter';

/** `Gitlab::Access.human_access`, as the forge names a role in its messages. */
const ROLE_NAMES: Record<number, string> = {
  10: 'Guest',
  20: 'Reporter',
  30: 'Developer',
  40: 'Maintainer',
  50: 'Owner',
};
/** A member's role: minimal access (5) in a group, guest to owner in both. */
const ROLES = [
  ACCESS_LEVELS.guest,
  ACCESS_LEVELS.reporter,
  ACCESS_LEVELS.developer,
  ACCESS_LEVELS.maintainer,
  ACCESS_LEVELS.owner,
];
const LEVELS: Record<SourceKind, readonly number[]> = {
  group: [ACCESS_LEVELS.minimal_access, ...ROLES],
  project: ROLES,
};

interface Source {
  kind: SourceKind;
  id: number;
  /** The caller's role there. */
  level: number;
  /** The groups above it, whose memberships a member inherits. */
  ancestors: GroupRecord[];
}

/**
 * A person changing someone's role (GitLab's "Group and project members API", "Edit a member of a group or
 * project"). The sandbox reads roles from the member records on every request (`api/access.ts`), so the new level,
 * lowered or raised, is what the member's tokens may do from the next request on.
 */
export function registerMemberRoutes(router: Router): void {
  for (const kind of ['group', 'project'] as const) {
    router.put(`/${kind}s/:id/members/:user_id`, (ctx) => {
      const userId = intRouteParam(ctx, 'user_id');
      requiredParam(ctx, 'access_level');
      const accessLevel = intParam(ctx, 'access_level') ?? 0;
      const expiresAt = expiryParam(ctx);
      const source = findSource(ctx, kind);
      // `authorize_admin_source!`: a group's owners, a project's maintainers.
      if (source.level < (kind === 'group' ? OWNER : MAINTAINER)) throw forbidden();
      const member = ctx.state.member(kind, source.id, userId);
      const user = ctx.state.users.get(userId);
      // A direct membership only (`source.members.find_by!`): ActiveRecord's bare 404.
      if (!member || !user) throw notFound();
      if (!mayChange(ctx.state, source, member, accessLevel)) throw forbidden();
      validate(ctx, source, member, accessLevel, expiresAt);
      member.access_level = accessLevel;
      if (expiresAt !== undefined) member.expires_at = expiresAt;
      return ok(new Presenter(ctx.state, ctx.baseUrl).member(user, member));
    });
  }
}

function findSource(ctx: RequestContext, kind: SourceKind): Source {
  const user = currentUser(ctx);
  if (kind === 'group') {
    const group = findGroup(ctx);
    return {
      kind,
      id: group.id,
      level: groupLevel(ctx.state, user, group),
      ancestors: ctx.state.groupChain(group).slice(1),
    };
  }
  const project = findProject(ctx);
  const group = ctx.state.groups.get(project.namespace_id);
  return {
    kind,
    id: project.id,
    level: projectLevel(ctx.state, user, project),
    ancestors: group ? ctx.state.groupChain(group) : [],
  };
}

/**
 * `Members::UpdateService`'s permission: only an owner makes or unmakes an owner (`manage_owners`), and a group's
 * last owner stays one (`last_owner` prevents `update_group_member`).
 */
function mayChange(state: SandboxState, source: Source, member: MemberRecord, accessLevel: number): boolean {
  const touchesOwner = accessLevel === OWNER || member.access_level === OWNER;
  if (touchesOwner && source.level < OWNER) return false;
  if (source.kind === 'group' && member.access_level === OWNER && accessLevel < OWNER) {
    const group = state.groups.get(source.id);
    const owners = [...state.users.values()].filter(
      (u) => group && state.namespaces.groupAccessLevel(u, group) >= OWNER,
    );
    return owners.length > 1;
  }
  return true;
}

/** The member's validations: a role of the table, not below one inherited from a group above, no expiry in the past. */
function validate(
  ctx: RequestContext,
  source: Source,
  member: MemberRecord,
  accessLevel: number,
  expiresAt: string | null | undefined,
): void {
  const errors: Record<string, string[]> = {};
  const inherited = source.ancestors
    .map((group) => ({ group, level: ctx.state.member('group', group.id, member.user_id)?.access_level ?? 0 }))
    .sort((a, b) => b.level - a.level)[0];
  if (!LEVELS[source.kind].includes(accessLevel)) errors.access_level = ['is not included in the list'];
  else if (inherited && inherited.level > accessLevel) {
    errors.access_level = [
      `should be greater than or equal to ${ROLE_NAMES[inherited.level]} inherited membership from group ${inherited.group.name}`,
    ];
  }
  if (expiresAt && expiresAt < ctx.state.nowIso().slice(0, 10)) errors.expires_at = ['cannot be a date in the past'];
  if (Object.keys(errors).length > 0) throw validationError(errors);
}

/** `expires_at`: a date (`YYYY-MM-DD`, a time is cut to its day), empty for none; omitted keeps the current one. */
function expiryParam(ctx: RequestContext): string | null | undefined {
  const value = param(ctx, 'expires_at');
  if (value === undefined) return undefined;
  if (value === '') return null;
  const parsed = Date.parse(value);
  if (Number.isNaN(parsed)) throw paramError('expires_at is invalid');
  return new Date(parsed).toISOString().slice(0, 10);
}
