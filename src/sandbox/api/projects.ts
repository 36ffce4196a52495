import { SORT_DIRECTIONS, VISIBILITIES, type SortDirection } from '../../gitlab/types/common';
import { PROJECT_ORDER_BY, type ProjectOrderBy } from '../../gitlab/types/projects';
import { ApiError, boolParam, enumParam, intParam, ok, param, type RequestContext } from '../http/context';
import { paginate, paginateByKeyset } from '../http/pagination';
import type { Router } from '../http/router';
import type { ProjectRecord } from '../state';
import { canSeeProject, currentUser, findProject, GUEST, OWNER } from './access';
import { ProjectPresenter } from './projects.presenter';

/**
 * Projects (GitLab's public API docs, Projects API; beyond the forge's API specification): the listing every caller
 * sees (`GET /projects`, with keyset pagination for `order_by=id`) and one project. A group's projects are served by
 * `api/groups.ts` with the same filters.
 */

export function registerProjectRoutes(router: Router): void {
  router
    .get('/projects', (ctx) => {
      const user = currentUser(ctx);
      const keyset = enumParam(ctx, 'pagination', ['offset', 'keyset']) === 'keyset';
      const { orderBy, sort } = projectOrder(ctx);
      // The forge pages projects by keyset only in id order (its default order is created_at, so it must be asked for).
      if (keyset && orderBy !== 'id') {
        throw new ApiError(405, { message: 'Keyset pagination is not yet available for this type of request' });
      }
      const membership = boolParam(ctx, 'membership') ?? false;
      const projects = filterProjects(
        ctx,
        [...ctx.state.projects.values()].filter(
          // Membership counts for administrators too: they see every project, but are members of few.
          (p) => canSeeProject(ctx.state, user, p) && (!membership || ctx.state.projectAccessLevel(user, p) >= GUEST),
        ),
      );
      sortProjects(projects, orderBy, sort);
      const present = projectPresenter(ctx);
      return keyset ? paginateByKeyset(ctx, projects, sort, present) : paginate(ctx, projects, present);
    })
    .get('/projects/:id', (ctx) => {
      const project = findProject(ctx);
      return ok(new ProjectPresenter(ctx.state, ctx.baseUrl).project(project, currentUser(ctx)));
    });
}

/** `order_by` (default `created_at`) and `sort` (default `desc`), as the forge's projects listings take them. */
export function projectOrder(ctx: RequestContext): { orderBy: ProjectOrderBy; sort: SortDirection } {
  return {
    orderBy: enumParam(ctx, 'order_by', PROJECT_ORDER_BY) ?? 'created_at',
    sort: enumParam(ctx, 'sort', SORT_DIRECTIONS) ?? 'desc',
  };
}

/**
 * The filters both project listings take: `archived` (omitted: both), `search` (name, path or description),
 * `visibility`, `owned` and `min_access_level` (the caller's own role, as a member: an administrator owns nothing by
 * being one), `id_after`, `id_before`.
 */
export function filterProjects(ctx: RequestContext, projects: ProjectRecord[]): ProjectRecord[] {
  const user = currentUser(ctx);
  const archived = boolParam(ctx, 'archived');
  const search = param(ctx, 'search')?.toLowerCase();
  const visibility = enumParam(ctx, 'visibility', VISIBILITIES);
  const minLevel = boolParam(ctx, 'owned') ? OWNER : intParam(ctx, 'min_access_level');
  const idAfter = intParam(ctx, 'id_after');
  const idBefore = intParam(ctx, 'id_before');
  return projects.filter(
    (p) =>
      (archived === undefined || p.archived === archived) &&
      (search === undefined || matchesSearch(p, search)) &&
      (visibility === undefined || p.visibility === visibility) &&
      (minLevel === undefined || ctx.state.projectAccessLevel(user, p) >= minLevel) &&
      (idAfter === undefined || p.id > idAfter) &&
      (idBefore === undefined || p.id < idBefore),
  );
}

function matchesSearch(project: ProjectRecord, search: string): boolean {
  return [project.name, project.path, project.description ?? ''].some((text) => text.toLowerCase().includes(search));
}

/** In place; ties broken by id in the same direction, so that pages never overlap. */
export function sortProjects(projects: ProjectRecord[], orderBy: ProjectOrderBy, sort: SortDirection): void {
  const key = (p: ProjectRecord): string | number => {
    switch (orderBy) {
      case 'id':
        return p.id;
      case 'name':
        return p.name.toLowerCase();
      case 'path':
        return p.path.toLowerCase();
      case 'created_at':
        return p.created_at;
      // The sandbox has no pushes or edits: a project was last updated at its last activity.
      case 'updated_at':
      case 'last_activity_at':
        return p.last_activity_at;
    }
  };
  const direction = sort === 'asc' ? 1 : -1;
  projects.sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return (ka < kb ? -1 : ka > kb ? 1 : a.id - b.id) * direction;
  });
}

/** `simple=true` gives the short view, otherwise the caller's full view. */
export function projectPresenter(ctx: RequestContext): (project: ProjectRecord) => unknown {
  const presenter = new ProjectPresenter(ctx.state, ctx.baseUrl);
  const user = currentUser(ctx);
  return boolParam(ctx, 'simple') ? (p) => presenter.simpleProject(p) : (p) => presenter.project(p, user);
}
