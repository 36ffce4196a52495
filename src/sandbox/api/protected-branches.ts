import {
  DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL,
  PROTECTED_BRANCH_ACCESS_LEVEL_VALUES,
} from '../../gitlab/types/protected-branches';
import {
  ApiError,
  boolParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  requiredParam,
  validationError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { BranchAccessRecord, ProjectRecord, ProtectedBranchRecord } from '../state';
import { DEVELOPER, findProject, GUEST, MAINTAINER } from './access';
import { ProtectedBranchPresenter } from './protected-branches.presenter';

const KINDS = [
  { level: 'push_access_level', allowed: 'allowed_to_push', field: 'push_access_levels' },
  { level: 'merge_access_level', allowed: 'allowed_to_merge', field: 'merge_access_levels' },
  { level: 'unprotect_access_level', allowed: 'allowed_to_unprotect', field: 'unprotect_access_levels' },
] as const;

/**
 * Protected branches of a project (GitLab's "Protected branches API"). The sandbox asks developer to read and
 * maintainer to change, as the forge does. `:name` is one URL-encoded segment (`release%2F*`) and matches a protected
 * name or wildcard exactly.
 */
export function registerProtectedBranchRoutes(router: Router): void {
  router
    .get('/projects/:id/protected_branches', (ctx) => {
      const project = findProject(ctx, DEVELOPER);
      const search = param(ctx, 'search')?.toLowerCase();
      const branches = branchesOf(ctx, project).filter((b) => !search || b.name.toLowerCase().includes(search));
      return paginate(ctx, branches, (b) => present(ctx).protectedBranch(b));
    })
    .get('/projects/:id/protected_branches/:name', (ctx) => {
      const project = findProject(ctx, DEVELOPER);
      return ok(present(ctx).protectedBranch(findBranch(ctx, project)));
    })
    .post('/projects/:id/protected_branches', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      return ok(present(ctx).protectedBranch(protect(ctx, project)), 201);
    })
    .on('PATCH', '/projects/:id/protected_branches/:name', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const branch = findBranch(ctx, project);
      // Optional, default false.
      branch.code_owner_approval_required = boolParam(ctx, 'code_owner_approval_required') ?? false;
      return ok(present(ctx).protectedBranch(branch));
    })
    .delete('/projects/:id/protected_branches/:name', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      ctx.state.protectedBranches.delete(findBranch(ctx, project).id);
      return noContent();
    });
}

function protect(ctx: RequestContext, project: ProjectRecord): ProtectedBranchRecord {
  const name = requiredParam(ctx, 'name');
  const lists = KINDS.map((kind) => accessList(ctx, project, kind));
  const allowForcePush = boolParam(ctx, 'allow_force_push') ?? false;
  const codeOwners = boolParam(ctx, 'code_owner_approval_required') ?? false;
  if (ctx.state.protectedBranch(project.id, name)) {
    throw new ApiError(409, { message: `Protected branch '${name}' already exists` });
  }
  const record: ProtectedBranchRecord = {
    id: ctx.state.nextId('protectedBranch'),
    project_id: project.id,
    name,
    push_access_levels: lists[0],
    merge_access_levels: lists[1],
    unprotect_access_levels: lists[2],
    allow_force_push: allowForcePush,
    code_owner_approval_required: codeOwners,
  };
  ctx.state.protectedBranches.set(record.id, record);
  return record;
}

function accessLevel(value: unknown, name: string): number {
  const text = typeof value === 'number' ? String(value) : value;
  const level = typeof text === 'string' && /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(PROTECTED_BRANCH_ACCESS_LEVEL_VALUES as readonly number[]).includes(level))
    throw paramError(`${name} does not have a valid value`);
  return level;
}

/**
 * `<kind>_access_level` (default 40) plus the `allowed_to_<kind>` entries; the default level is left out when
 * only `allowed_to_<kind>` is given, as on the forge. Users need access to the project, groups a share of it.
 */
function accessList(ctx: RequestContext, project: ProjectRecord, kind: (typeof KINDS)[number]): BranchAccessRecord[] {
  const rawLevel = param(ctx, kind.level);
  const level = rawLevel === undefined ? undefined : accessLevel(rawLevel, kind.level);
  const allowed = ctx.body[kind.allowed];
  if (allowed !== undefined && !Array.isArray(allowed)) throw paramError(`${kind.allowed} is invalid`);
  const entries: BranchAccessRecord[] = [];
  if (level !== undefined || allowed === undefined || allowed.length === 0) {
    entries.push({ access_level: level ?? DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL, user_id: null, group_id: null });
  }
  (allowed ?? []).forEach((item: unknown, i: number) => {
    const entry = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
    const keys = Object.keys(entry).filter((k) => ['user_id', 'group_id', 'access_level'].includes(k));
    if (keys.length !== 1)
      throw paramError(`${kind.allowed}[${i}] must have exactly one of user_id, group_id, access_level`);
    const id = Number(entry[keys[0]]);
    if (keys[0] === 'access_level') {
      entries.push({
        access_level: accessLevel(entry.access_level, `${kind.allowed}[${i}][access_level]`),
        user_id: null,
        group_id: null,
      });
      return;
    }
    if (!Number.isSafeInteger(id)) throw paramError(`${kind.allowed}[${i}][${keys[0]}] is invalid`);
    if (keys[0] === 'user_id') {
      const user = ctx.state.users.get(id);
      if (!user || ctx.state.projectAccessLevel(user, project) < GUEST) {
        throw validationError({ [`${kind.field}.user`]: ['is not a member of the project'] });
      }
      entries.push({ access_level: null, user_id: id, group_id: null });
    } else {
      if (!ctx.state.projectGroupLinks.get(project.id)?.has(id)) {
        throw validationError({ [`${kind.field}.group`]: ['does not have access to the project'] });
      }
      entries.push({ access_level: null, user_id: null, group_id: id });
    }
  });
  return entries;
}

function branchesOf(ctx: RequestContext, project: ProjectRecord): ProtectedBranchRecord[] {
  return [...ctx.state.protectedBranches.values()]
    .filter((b) => b.project_id === project.id)
    .sort((a, b) => a.id - b.id);
}

/** ActiveRecord `find_by!`: a bare `404 Not found`. */
function findBranch(ctx: RequestContext, project: ProjectRecord): ProtectedBranchRecord {
  const branch = ctx.state.protectedBranch(project.id, ctx.params.name ?? '');
  if (!branch) throw notFound();
  return branch;
}

function present(ctx: RequestContext): ProtectedBranchPresenter {
  return new ProtectedBranchPresenter(ctx.state, ctx.baseUrl);
}
