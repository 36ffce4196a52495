import { randomBytes } from 'node:crypto';
import { ApiError, boolParam, ok, param, paramError, requiredParam, type RequestContext } from '../http/context';
import { UploadedFile } from '../http/multipart';
import type { Router } from '../http/router';
import { rateLimited } from '../export-limits';
import { exportDelayMs } from '../group-transfer-state';
import { projectArchive, readProjectArchive, restoreProject } from '../project-archive';
import { type ProjectImportRecord, projectTransferOf } from '../project-transfer-state';
import { deleteProject } from '../removal';
import type { ProjectRecord, UserRecord } from '../state';
import { currentUser, findProject, groupLevel, MAINTAINER, projectLevel } from './access';
import { findVisibleNamespace, namespaceId } from './namespaces';
import { PROJECT_PATH_MESSAGE, validProjectPath } from './project-edits';
import { Presenter } from './presenter';

const ACCEPTED = { message: '202 Accepted' };
const NOT_READY = { message: '404 Not found or has expired' };
/** What the forge answers a caller who may not read the import's error (`read_import_error`). */
const IMPORT_ERROR_HIDDEN = 'Ask a maintainer to check the import status for more details.';

/**
 * Project export and import (GitLab's "Project import and export API", beyond the forge's API specification), answered
 * as `lib/api/project_export.rb` and `project_import.rb` answer: maintainers export, read the status and download; an
 * import creates the project at once (201) and fills it after the delay. Exports, downloads and imports are rate
 * limited like the forge's (`export_rate_limits`), counted after the role check and before anything else, so a 404
 * download counts and a 429 changes nothing.
 */
export function registerProjectTransferRoutes(router: Router): void {
  router
    .post('/projects/import', (ctx) => importProject(ctx))
    .get('/projects/:id/import', (ctx) => {
      const project = findProject(ctx);
      return ok(importStatusView(ctx, project));
    })
    .post('/projects/:id/export', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const limited = rateLimited(ctx, 'projectExport', String(currentUser(ctx).id));
      if (limited) return limited;
      const description = param(ctx, 'description');
      const { state } = ctx;
      const transfer = projectTransferOf(state);
      const record = transfer.exportRecord(project.id);
      // The finished archive stays downloadable while the new one is made (`regeneration_in_progress`); only the
      // latest request stores its archive.
      const request = Symbol('export');
      record.pending = { request, phase: 'queued' };
      record.failed = false;
      const delay = exportDelayMs(state);
      state.schedule(Math.floor(delay / 2), () => {
        if (record.pending?.request === request) record.pending.phase = 'started';
      });
      state.schedule(delay, () => {
        if (record.pending?.request !== request) return;
        record.pending = null;
        if (!state.projects.has(project.id)) return;
        if (transfer.failingExports.has(project.id)) {
          record.archive = null;
          record.failed = true;
          return;
        }
        const data = projectArchive(state, project, { description, paddingBytes: state.settings.exportPaddingBytes });
        record.archive = { data, madeAt: state.clock.now() };
      });
      return ok(ACCEPTED, 202);
    })
    .get('/projects/:id/export', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const status = projectTransferOf(ctx.state).exportStatus(project.id, ctx.state.clock.now());
      const fullPath = ctx.state.projectFullPath(project);
      return ok({
        ...new Presenter(ctx.state, ctx.baseUrl).projectSummary(project),
        export_status: status,
        // The forge links the archive only while the status is `finished`.
        ...(status === 'finished'
          ? {
              _links: {
                api_url: `${ctx.baseUrl}/api/v4/projects/${project.id}/export/download`,
                web_url: `${ctx.baseUrl}/${fullPath}/download_export`,
              },
            }
          : {}),
      });
    })
    .get('/projects/:id/export/download', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const limited = rateLimited(ctx, 'projectDownloadExport', `${currentUser(ctx).id}:${project.id}`);
      if (limited) return limited;
      const archive = projectTransferOf(ctx.state).archive(project.id, ctx.state.clock.now());
      if (!archive) throw new ApiError(404, NOT_READY);
      // `Gitlab::ImportExport.export_filename`: time to the millisecond, then the full path with `_`.
      const stamp = new Date(archive.madeAt).toISOString().replace(/T(\d\d):(\d\d):(\d\d)\.(\d\d\d)Z$/, '_$1-$2-$4');
      const name = `${stamp}_${ctx.state.projectFullPath(project).replace(/\//g, '_')}_export.tar.gz`;
      return {
        status: 200,
        binary: archive.data,
        headers: { 'Content-Type': 'application/gzip', 'Content-Disposition': `attachment; filename="${name}"` },
      };
    });
}

/** `POST /projects/import`: Grape's parameter checks, the rate limit, the file's name, the namespace, the path. */
function importProject(ctx: RequestContext) {
  const user = currentUser(ctx);
  const path = requiredParam(ctx, 'path');
  const file = ctx.body.file;
  if (file === undefined) throw paramError('file is missing');
  if (!(file instanceof UploadedFile)) throw paramError('file is invalid');
  const overwrite = boolParam(ctx, 'overwrite') ?? false;
  const name = param(ctx, 'name') || path;
  const limited = rateLimited(ctx, 'projectImport', String(user.id));
  if (limited) return limited;
  // `validate_file!`: only the name is looked at here; whether it is an archive shows when the worker reads it.
  if (!/\.gz$/i.test(file.filename)) {
    throw new ApiError(422, {
      message: { error: 'You need to upload a GitLab project export archive (ending in .gz).' },
    });
  }
  const { state } = ctx;
  const namespaceId = importNamespace(ctx, user);
  if (!validProjectPath(path)) throw new ApiError(400, { message: `Path ${PROJECT_PATH_MESSAGE}` });

  const lower = path.toLowerCase();
  const sameProject = [...state.projects.values()].find(
    (p) => p.namespace_id === namespaceId && p.path.toLowerCase() === lower,
  );
  const sameGroup = [...state.groups.values()].some(
    (g) => g.parent_id === namespaceId && g.path.toLowerCase() === lower,
  );
  if (sameGroup || (sameProject && !overwrite)) throw new ApiError(400, { message: 'Path has already been taken' });

  // With `overwrite`, the forge imports under a temporary path and moves the project into place once it is done.
  const replaces = sameProject ? { projectId: sameProject.id, path: sameProject.path } : null;
  const now = state.nowIso();
  const project: ProjectRecord = {
    id: state.nextId('project'),
    name,
    path: replaces ? `${path}-${randomBytes(16).toString('hex')}` : path,
    namespace_id: namespaceId,
    description: null,
    visibility: 'private',
    request_access_enabled: true,
    created_at: now,
    archived: false,
    default_branch: 'main',
    last_activity_at: now,
    allowed_agents: [],
  };
  state.projects.set(project.id, project);
  state.namespaces.claimProjectPath(project);
  const record: ProjectImportRecord = {
    status: 'scheduled',
    correlation_id: randomBytes(16).toString('hex'),
    error: null,
    failed_relations: [],
    replaces,
  };
  const transfer = projectTransferOf(state);
  transfer.imports.set(project.id, record);

  const delay = exportDelayMs(state);
  state.schedule(Math.floor(delay / 2), () => {
    if (record.status === 'scheduled') record.status = 'started';
  });
  state.schedule(delay, () => {
    if (!state.projects.has(project.id)) return;
    const read = readProjectArchive(file.data, file.filename);
    if (!read.ok) {
      record.status = 'failed';
      record.error = read.error;
      return;
    }
    restoreProject(state, project, read.archive, user);
    const at = state.nowIso();
    record.failed_relations = read.failures.map((failure) => ({
      id: transfer.nextFailedRelationId(),
      created_at: at,
      exception_class: failure.exception_class,
      exception_message: failure.exception_message,
      source: 'process_relation_item!',
      relation_name: failure.relation_name,
      line_number: failure.line_number,
    }));
    if (replaces) {
      const old = state.projects.get(replaces.projectId);
      if (old) deleteProject(state, old);
      project.path = replaces.path;
      state.namespaces.claimProjectPath(project);
    }
    record.status = 'finished';
  });
  return ok(importStatusView(ctx, project), 201);
}

/**
 * The namespace named by `namespace` (an id or full path; the caller's own when omitted): a group the caller can see
 * and create projects in (maintainer), or a user's namespace (their own; an administrator's pick). One the caller
 * cannot see answers 404 `Namespace`, one they may not create projects in 400 `Namespace is not valid`.
 */
function importNamespace(ctx: RequestContext, user: UserRecord): number {
  const ref = param(ctx, 'namespace');
  if (ref === undefined || ref === '') return user.namespace_id;
  const ns = findVisibleNamespace(ctx, ref);
  if (ns.kind === 'group' && groupLevel(ctx.state, user, ns.group) < MAINTAINER) {
    throw new ApiError(400, { message: 'Namespace is not valid' });
  }
  return namespaceId(ns);
}

/** The forge's `ProjectImportStatus`: a project that was not imported says `none`. */
function importStatusView(ctx: RequestContext, project: ProjectRecord): Record<string, unknown> {
  const record = projectTransferOf(ctx.state).imports.get(project.id);
  const user = currentUser(ctx);
  const mayReadError = projectLevel(ctx.state, user, project) >= MAINTAINER;
  const error = record?.error ?? null;
  return {
    ...new Presenter(ctx.state, ctx.baseUrl).projectSummary(project),
    import_status: record?.status ?? 'none',
    import_type: record ? 'gitlab_project' : null,
    correlation_id: record?.correlation_id ?? null,
    failed_relations: record?.failed_relations ?? [],
    import_error: error === null || mayReadError ? error : IMPORT_ERROR_HIDDEN,
    stats: null,
  };
}
