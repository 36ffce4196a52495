import {
  boolParam,
  intRouteParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  timestampParam,
  validationError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { DeployKeyRecord, ProjectRecord } from '../state';
import { currentUser, findProject, MAINTAINER, requireAdmin } from './access';
import { DeployKeyPresenter } from './deploy-keys.presenter';
import { FINGERPRINT_TAKEN, requireParams, validateKeyText } from './ssh-keys';

/** Deploy keys (GitLab's "Deploy keys API"): one key may be enabled on several projects. */
export function registerDeployKeyRoutes(router: Router): void {
  router
    .get('/deploy_keys', (ctx) => {
      requireAdmin(ctx);
      const keys = [...ctx.state.deployKeys.values()].sort((a, b) => a.id - b.id);
      return paginate(ctx, keys, (k) => present(ctx).deployKeyInstance(k));
    })
    .get('/projects/:id/deploy_keys', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const keys = [...ctx.state.deployKeys.values()]
        .filter((k) => k.projects.has(project.id))
        .sort((a, b) => a.id - b.id);
      return paginate(ctx, keys, (k) => present(ctx).deployKeyInProject(k, project.id));
    })
    .get('/projects/:id/deploy_keys/:key_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      return ok(present(ctx).deployKeyInProject(findProjectKey(ctx, project), project.id));
    })
    .post('/projects/:id/deploy_keys', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const key = addKey(ctx, project);
      return ok(present(ctx).deployKeyInProject(key, project.id), 201);
    })
    .put('/projects/:id/deploy_keys/:key_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const key = findProjectKey(ctx, project);
      const title = param(ctx, 'title');
      const canPush = boolParam(ctx, 'can_push');
      if (title === undefined && canPush === undefined) {
        throw paramError('title, can_push are missing, at least one parameter must be provided');
      }
      if (title !== undefined) key.title = title;
      if (canPush !== undefined) key.projects.set(project.id, { can_push: canPush });
      return ok(present(ctx).deployKeyInProject(key, project.id));
    })
    .delete('/projects/:id/deploy_keys/:key_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const key = findProjectKey(ctx, project);
      key.projects.delete(project.id);
      // The key itself goes once no project uses it any more.
      if (key.projects.size === 0) ctx.state.deployKeys.delete(key.id);
      return noContent();
    })
    .post('/projects/:id/deploy_keys/:key_id/enable', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const key = ctx.state.deployKeys.get(intRouteParam(ctx, 'key_id'));
      if (!key || !accessible(ctx, key)) throw notFound('Deploy Key');
      if (!key.projects.has(project.id)) key.projects.set(project.id, { can_push: false });
      return ok(present(ctx).sshKey(key), 201);
    });
}

/**
 * A key already on this project is returned as is; one on another project the caller maintains joins this
 * project; any other key with the same fingerprint is a validation error, as on the forge.
 */
function addKey(ctx: RequestContext, project: ProjectRecord): DeployKeyRecord {
  const { title, key: text } = requireParams(ctx, ['title', 'key']);
  const canPush = boolParam(ctx, 'can_push') ?? false;
  const expiresAt = timestampParam(ctx, 'expires_at') ?? null;
  const parsed = validateKeyText(text, 'deploy_key.');
  const existing = ctx.state.keyWithFingerprint(parsed.fingerprintSha256);
  if (existing && 'projects' in existing) {
    if (existing.projects.has(project.id)) return existing;
    if (accessible(ctx, existing)) {
      existing.projects.set(project.id, { can_push: canPush });
      return existing;
    }
  }
  if (existing) throw validationError({ 'deploy_key.fingerprint': [FINGERPRINT_TAKEN] });
  const record: DeployKeyRecord = {
    id: ctx.state.nextId('key'),
    title,
    key: text.trim(),
    normalized: parsed.normalized,
    fingerprint: parsed.fingerprintMd5,
    fingerprint_sha256: parsed.fingerprintSha256,
    created_at: ctx.state.nowIso(),
    expires_at: expiresAt,
    projects: new Map([[project.id, { can_push: canPush }]]),
  };
  ctx.state.deployKeys.set(record.id, record);
  return record;
}

/** A deploy key the caller may reuse: an administrator any, others those on a project they maintain. */
function accessible(ctx: RequestContext, key: DeployKeyRecord): boolean {
  const user = currentUser(ctx);
  if (user.is_admin) return true;
  return [...key.projects.keys()].some((id) => {
    const project = ctx.state.projects.get(id);
    return project !== undefined && ctx.state.projectAccessLevel(user, project) >= MAINTAINER;
  });
}

function findProjectKey(ctx: RequestContext, project: ProjectRecord): DeployKeyRecord {
  const key = ctx.state.deployKeys.get(intRouteParam(ctx, 'key_id'));
  if (!key || !key.projects.has(project.id)) throw notFound('Deploy Key');
  return key;
}

function present(ctx: RequestContext): DeployKeyPresenter {
  return new DeployKeyPresenter(ctx.state, ctx.baseUrl);
}
