import { checkRegexParams, selectTagsToDelete, type BulkDeleteParams } from '../bulk-delete';
import {
  ApiError,
  boolParam,
  forbidden,
  intParam,
  intRouteParam,
  notFound,
  ok,
  param,
  paramError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { BulkDeletionRecord, ProjectRecord, RepositoryRecord, SandboxState } from '../state';
import {
  canSeeProject,
  currentUser,
  DEVELOPER,
  findGroup,
  findProject,
  MAINTAINER,
  projectLevel,
  requireUnarchived,
} from './access';
import { RegistryPresenter } from './registry.presenter';

const HOUR_MS = 60 * 60 * 1000;

/** The forge's exact answer to a second bulk deletion within the hour (400, not 429). */
export const BULK_DELETE_LIMIT_MESSAGE =
  'This request has already been made. You can run this at most once an hour for a given container repository';

/** Container registry (GitLab's "Container registry API"). */
export function registerRegistryRoutes(router: Router): void {
  router
    .get('/projects/:id/registry/repositories', (ctx) => {
      const project = findProject(ctx);
      const repositories = repositoriesOf(ctx.state, [project]);
      return paginate(ctx, repositories, (r) => present(ctx).repository(r, listOptions(ctx)));
    })
    .get('/groups/:id/registry/repositories', (ctx) => {
      const group = findGroup(ctx);
      const user = currentUser(ctx);
      const projects = ctx.state.projectsInGroupTree(group).filter((p) => canSeeProject(ctx.state, user, p));
      const repositories = repositoriesOf(ctx.state, projects);
      return paginate(ctx, repositories, (r) => present(ctx).repository(r, listOptions(ctx)));
    })
    .get('/registry/repositories/:id', (ctx) => {
      const user = currentUser(ctx);
      const id = ctx.params.id ?? '';
      const repository = /^\d+$/.test(id) ? ctx.state.repositories.get(Number(id)) : undefined;
      if (!repository) throw notFound();
      const project = ctx.state.projects.get(repository.project_id);
      // The forge authorizes against the repository itself here, so an unreadable one is 403, not 404.
      if (!project || !canSeeProject(ctx.state, user, project)) throw forbidden();
      return ok(present(ctx).repository(repository, listOptions(ctx)));
    })
    .delete('/projects/:id/registry/repositories/:repository_id', (ctx) => {
      const project = findProject(ctx);
      const repository = findRepository(ctx, project);
      requireLevel(ctx, project, MAINTAINER);
      repository.status = 'delete_scheduled';
      // Deletion is asynchronous; the repository is gone once the worker has run.
      ctx.state.schedule(ctx.state.settings.bulkDeleteDelayMs, () => {
        ctx.state.repositories.delete(repository.id);
        ctx.state.cleanupLeases.delete(repository.id);
      });
      return { status: 202 };
    })
    .get('/projects/:id/registry/repositories/:repository_id/tags', (ctx) => {
      const project = findProject(ctx);
      const repository = findRepository(ctx, project);
      return paginate(ctx, ctx.state.tags(repository.id), (t) => present(ctx).tag(repository, t));
    })
    .get('/projects/:id/registry/repositories/:repository_id/tags/:tag_name', (ctx) => {
      const project = findProject(ctx);
      const repository = findRepository(ctx, project);
      const tag = repository.tags.get(ctx.params.tag_name ?? '');
      if (!tag) throw notFound('Tag');
      return ok(present(ctx).tagDetail(repository, tag));
    })
    .delete('/projects/:id/registry/repositories/:repository_id/tags/:tag_name', (ctx) => {
      const project = findProject(ctx);
      const repository = findRepository(ctx, project);
      requireLevel(ctx, project, DEVELOPER);
      const name = ctx.params.tag_name ?? '';
      if (!repository.tags.has(name)) throw notFound('Tag');
      repository.tags.delete(name);
      return { status: 200 };
    })
    .delete('/projects/:id/registry/repositories/:repository_id/tags', (ctx) => bulkDelete(ctx));
}

/**
 * Bulk tag deletion. Checks run in the forge's order: parameters (400 `{"error"}`), repository (404), role (403),
 * the hourly lease (400 with the fixed message, no Retry-After), then 202 and the work happens in the background.
 */
function bulkDelete(ctx: RequestContext): ReturnType<typeof ok> {
  const project = findProject(ctx);
  const params = bulkParams(ctx);
  const repository = findRepository(ctx, project);
  requireLevel(ctx, project, MAINTAINER);

  const state = ctx.state;
  const now = state.clock.now();
  const leaseUntil = state.cleanupLeases.get(repository.id);
  if (leaseUntil !== undefined && leaseUntil > now) throw new ApiError(400, { message: BULK_DELETE_LIMIT_MESSAGE });
  state.cleanupLeases.set(repository.id, now + HOUR_MS);

  const record: BulkDeletionRecord = {
    repository_id: repository.id,
    requested_at: state.nowIso(),
    params: { ...params },
    applied_at: null,
    deleted: [],
    error: null,
  };
  state.bulkDeletions.push(record);
  state.schedule(state.settings.bulkDeleteDelayMs, () => applyBulkDelete(state, repository, params, record));
  return { status: 202 };
}

function applyBulkDelete(
  state: SandboxState,
  repository: RepositoryRecord,
  params: BulkDeleteParams,
  record: BulkDeletionRecord,
): void {
  const tags = [...repository.tags.values()].map((t) => ({
    name: t.name,
    createdAt: t.created_at === null ? null : new Date(t.created_at),
  }));
  const outcome = selectTagsToDelete(tags, params, state.clock.date(), state.settings.bulkDeleteCap ?? undefined);
  record.applied_at = state.nowIso();
  if (!outcome.ok) {
    record.error = outcome.error;
    return;
  }
  for (const name of outcome.toDelete) repository.tags.delete(name);
  record.deleted = outcome.toDelete;
}

function bulkParams(ctx: RequestContext): BulkDeleteParams {
  const params: BulkDeleteParams = {};
  const nameRegexDelete = param(ctx, 'name_regex_delete');
  const nameRegex = param(ctx, 'name_regex');
  const nameRegexKeep = param(ctx, 'name_regex_keep');
  const olderThan = param(ctx, 'older_than');
  if (nameRegexDelete !== undefined) params.name_regex_delete = nameRegexDelete;
  if (nameRegex !== undefined) params.name_regex = nameRegex;
  if (nameRegexKeep !== undefined) params.name_regex_keep = nameRegexKeep;
  if (olderThan !== undefined) params.older_than = olderThan;
  const check = checkRegexParams(params);
  if (!check.ok) throw paramError(`${check.param} ${check.message}`);
  const keepN = intParam(ctx, 'keep_n');
  if (keepN !== undefined) params.keep_n = keepN;
  if (nameRegexDelete === undefined && nameRegex === undefined) {
    throw paramError('name_regex, name_regex_delete are missing, at least one parameter must be provided');
  }
  return params;
}

function present(ctx: RequestContext): RegistryPresenter {
  return new RegistryPresenter(ctx.state, ctx.baseUrl);
}

function listOptions(ctx: RequestContext): { tags: boolean; tagsCount: boolean } {
  return { tags: boolParam(ctx, 'tags') ?? false, tagsCount: boolParam(ctx, 'tags_count') ?? false };
}

function repositoriesOf(state: SandboxState, projects: ProjectRecord[]): RepositoryRecord[] {
  const ids = new Set(projects.map((p) => p.id));
  return [...state.repositories.values()].filter((r) => ids.has(r.project_id)).sort((a, b) => a.id - b.id);
}

function findRepository(ctx: RequestContext, project: ProjectRecord): RepositoryRecord {
  const repository = ctx.state.repositories.get(intRouteParam(ctx, 'repository_id'));
  if (!repository || repository.project_id !== project.id) throw notFound();
  return repository;
}

/** The role a deletion needs; every caller lacks it in an archived project. */
function requireLevel(ctx: RequestContext, project: ProjectRecord, level: number): void {
  if (projectLevel(ctx.state, currentUser(ctx), project) < level) throw forbidden();
  requireUnarchived(project);
}
