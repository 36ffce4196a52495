import { ACCESS_LEVEL_VALUES, ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import {
  forbidden,
  intParam,
  intRouteParam,
  noContent,
  notFound,
  ok,
  validationError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { AccessRequestRecord, MemberRecord, SourceKind } from '../state';
import { currentUser, DEVELOPER, findGroup, findProject, GUEST, MAINTAINER, OWNER } from './access';
import { AccessRequestPresenter } from './access-requests.presenter';

/**
 * Access levels a member may get: in a group any but no access, in a project guest to
 * maintainer (owner only in groups, and the forge refuses minimal access for projects).
 */
const LEVELS: Record<SourceKind, readonly number[]> = {
  group: ACCESS_LEVEL_VALUES.filter((level) => level !== ACCESS_LEVELS.no_access),
  project: ACCESS_LEVEL_VALUES.filter((level) => level >= GUEST && level <= MAINTAINER),
};
/** Managing requests needs the forge's `admin_group_member` (owner) or `admin_project_member` (maintainer). */
const ADMIN_LEVEL: Record<SourceKind, number> = { group: OWNER, project: MAINTAINER };

interface Source {
  kind: SourceKind;
  id: number;
  requestAccessEnabled: boolean;
}

/** Group and project access requests (GitLab's "Group and project access requests API"). */
export function registerAccessRequestRoutes(router: Router): void {
  for (const kind of ['group', 'project'] as const) {
    const base = `/${kind}s/:id/access_requests`;
    router
      .get(base, (ctx) => {
        const source = findSource(ctx, kind, ADMIN_LEVEL[kind]);
        return paginate(ctx, requestsOf(ctx, source), (r) => present(ctx).accessRequest(r));
      })
      .post(base, (ctx) => {
        const source = findSource(ctx, kind, 0);
        const user = currentUser(ctx);
        // The forge refuses members and sources that do not take requests (`request_access` ability).
        if (!source.requestAccessEnabled || ctx.state.member(kind, source.id, user.id)) throw forbidden();
        let request = requestsOf(ctx, source).find((r) => r.user_id === user.id);
        if (!request) {
          request = {
            source: kind,
            source_id: source.id,
            user_id: user.id,
            username: user.username,
            user_state: user.state,
            requested_at: ctx.state.nowIso(),
          };
          ctx.state.accessRequests.push(request);
        }
        return ok(present(ctx).accessRequest(request), 201);
      })
      .put(`${base}/:user_id/approve`, (ctx) => {
        const source = findSource(ctx, kind, ADMIN_LEVEL[kind]);
        const request = findRequest(ctx, source);
        const accessLevel = intParam(ctx, 'access_level') ?? DEVELOPER;
        if (!LEVELS[kind].includes(accessLevel))
          throw validationError({ access_level: ['is not included in the list'] });
        const user = ctx.state.users.get(request.user_id);
        if (!user) throw notFound();
        const member: MemberRecord = {
          source: kind,
          source_id: source.id,
          user_id: user.id,
          access_level: accessLevel,
          created_at: ctx.state.nowIso(),
        };
        ctx.state.members.push(member);
        removeRequest(ctx, request);
        return ok(present(ctx).member(user, member));
      })
      .delete(`${base}/:user_id`, (ctx) => {
        const source = findSource(ctx, kind, ADMIN_LEVEL[kind]);
        removeRequest(ctx, findRequest(ctx, source));
        return noContent();
      });
  }
}

function findSource(ctx: RequestContext, kind: SourceKind, minLevel: number): Source {
  if (kind === 'group') {
    const group = findGroup(ctx, minLevel);
    return { kind, id: group.id, requestAccessEnabled: group.request_access_enabled };
  }
  const project = findProject(ctx, minLevel);
  return { kind, id: project.id, requestAccessEnabled: project.request_access_enabled };
}

function requestsOf(ctx: RequestContext, source: Source): AccessRequestRecord[] {
  return ctx.state.accessRequests.filter((r) => r.source === source.kind && r.source_id === source.id);
}

/** An unknown requester is a bare ActiveRecord 404 (`find_by!`). */
function findRequest(ctx: RequestContext, source: Source): AccessRequestRecord {
  const userId = intRouteParam(ctx, 'user_id');
  const request = requestsOf(ctx, source).find((r) => r.user_id === userId);
  if (!request) throw notFound();
  return request;
}

function removeRequest(ctx: RequestContext, request: AccessRequestRecord): void {
  const index = ctx.state.accessRequests.indexOf(request);
  if (index >= 0) ctx.state.accessRequests.splice(index, 1);
}

function present(ctx: RequestContext): AccessRequestPresenter {
  return new AccessRequestPresenter(ctx.state, ctx.baseUrl);
}
