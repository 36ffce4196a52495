import { SORT_DIRECTIONS } from '../../gitlab/types/common';
import { GROUP_ORDER_BY } from '../../gitlab/types/groups';
import { boolParam, enumParam, intParam, listParam, ok, param, type RequestContext } from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { GroupRecord, ProjectRecord } from '../state';
import { canSeeGroup, canSeeProject, currentUser, findGroup, GUEST, OWNER } from './access';
import { GroupPresenter } from './groups.presenter';
import { filterProjects, projectOrder, projectPresenter, sortProjects } from './projects';
import { ProjectPresenter } from './projects.presenter';

/**
 * Groups (GitLab's public API docs, Groups API; beyond the forge's API specification): the listings, one group with
 * its projects, and a group's projects, which is how project globs (`acme/**`) are resolved.
 */

/** The forge's `GroupDetail` embeds at most this many projects. */
const DETAIL_PROJECTS_LIMIT = 100;

export function registerGroupRoutes(router: Router): void {
  router
    .get('/groups', (ctx) => {
      const topLevelOnly = boolParam(ctx, 'top_level_only') ?? false;
      const groups = [...ctx.state.groups.values()].filter((g) => !topLevelOnly || g.parent_id === null);
      return listGroups(ctx, groups);
    })
    .get('/groups/:id', (ctx) => {
      const group = findGroup(ctx);
      const detail = new GroupPresenter(ctx.state, ctx.baseUrl).group(group);
      if (!(boolParam(ctx, 'with_projects') ?? true)) return ok(detail);
      const user = currentUser(ctx);
      const visible = (p: ProjectRecord): boolean => canSeeProject(ctx.state, user, p);
      const own = [...ctx.state.projects.values()].filter((p) => p.namespace_id === group.id && visible(p));
      const shared = [...ctx.state.projects.values()].filter((p) => isSharedWith(ctx, p, group.id) && visible(p));
      sortProjects(own, 'created_at', 'desc');
      sortProjects(shared, 'created_at', 'desc');
      const presenter = new ProjectPresenter(ctx.state, ctx.baseUrl);
      return ok({
        ...detail,
        projects: own.slice(0, DETAIL_PROJECTS_LIMIT).map((p) => presenter.project(p, user)),
        shared_projects: shared.slice(0, DETAIL_PROJECTS_LIMIT).map((p) => presenter.project(p, user)),
      });
    })
    .get('/groups/:id/subgroups', (ctx) => {
      const group = findGroup(ctx);
      return listGroups(
        ctx,
        [...ctx.state.groups.values()].filter((g) => g.parent_id === group.id),
      );
    })
    .get('/groups/:id/descendant_groups', (ctx) => {
      const group = findGroup(ctx);
      return listGroups(ctx, ctx.state.groupTree(group).slice(1));
    })
    .get('/groups/:id/projects', (ctx) => {
      const group = findGroup(ctx);
      const user = currentUser(ctx);
      // Subgroups widen the group's own projects only: shares count with the group itself (GroupProjectsFinder).
      const includeSubgroups = boolParam(ctx, 'include_subgroups') ?? false;
      const homes = new Set((includeSubgroups ? ctx.state.groupTree(group) : [group]).map((g) => g.id));
      const withShared = boolParam(ctx, 'with_shared') ?? true;
      const projects = filterProjects(
        ctx,
        [...ctx.state.projects.values()].filter(
          (p) =>
            (homes.has(p.namespace_id) || (withShared && isSharedWith(ctx, p, group.id))) &&
            canSeeProject(ctx.state, user, p),
        ),
      );
      const { orderBy, sort } = projectOrder(ctx);
      sortProjects(projects, orderBy, sort);
      return paginate(ctx, projects, projectPresenter(ctx));
    });
}

function isSharedWith(ctx: RequestContext, project: ProjectRecord, groupId: number): boolean {
  return ctx.state.projectGroupLinks.get(project.id)?.has(groupId) ?? false;
}

/**
 * `GET /groups` and a group's subgroups or descendants: the groups the caller is a member of (through an ancestor
 * too), or with `all_available` every group they can see (the default for administrators); `owned` and
 * `min_access_level` take precedence and count the caller's own role. Then `search` (name or path),
 * `skip_groups`, and the order (`name`, `path` or `id`; ascending by default).
 */
function listGroups(ctx: RequestContext, candidates: GroupRecord[]) {
  const user = currentUser(ctx);
  const allAvailable = boolParam(ctx, 'all_available') ?? user.is_admin;
  const minLevel = boolParam(ctx, 'owned') ? OWNER : intParam(ctx, 'min_access_level');
  const search = param(ctx, 'search')?.toLowerCase();
  const skipped = new Set((listParam(ctx, 'skip_groups') ?? []).map(Number));
  const orderBy = enumParam(ctx, 'order_by', GROUP_ORDER_BY) ?? 'name';
  const direction = (enumParam(ctx, 'sort', SORT_DIRECTIONS) ?? 'asc') === 'asc' ? 1 : -1;
  const groups = candidates.filter((g) => {
    if (skipped.has(g.id)) return false;
    if (search !== undefined && !g.name.toLowerCase().includes(search) && !g.path.toLowerCase().includes(search))
      return false;
    if (minLevel !== undefined) return ctx.state.groupAccessLevel(user, g) >= minLevel;
    return allAvailable ? canSeeGroup(ctx.state, user, g) : ctx.state.groupAccessLevel(user, g) >= GUEST;
  });
  const key = (g: GroupRecord): string | number =>
    orderBy === 'id' ? g.id : orderBy === 'name' ? g.name.toLowerCase() : g.path.toLowerCase();
  groups.sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return (ka < kb ? -1 : ka > kb ? 1 : a.id - b.id) * direction;
  });
  const presenter = new GroupPresenter(ctx.state, ctx.baseUrl);
  return paginate(ctx, groups, (g) => presenter.group(g));
}
