import { VISIBILITIES } from '../../gitlab/types/common';
import {
  ApiError,
  boolParam,
  forbidden,
  ok,
  param,
  paramError,
  requiredParam,
  validationError,
  type RequestContext,
} from '../http/context';
import type { Router } from '../http/router';
import type { ProjectRecord, UserRecord } from '../state';
import { currentUser, findProject, groupLevel, MAINTAINER, OWNER, projectLevel } from './access';
import { findVisibleNamespace, namespaceId, type Namespace } from './namespaces';
import { ProjectPresenter } from './projects.presenter';

/** `Gitlab::PathRegex.project_path_format_message`, the forge's words for a path it refuses. */
export const PROJECT_PATH_MESSAGE =
  "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'";
const NAME_MESSAGE =
  "can contain only letters, digits, emoji, '_', '.', '+', dashes, or spaces. It must start with a letter, digit, emoji, or '_'.";
const NAME_FORMAT = /^[\p{L}\p{N}\p{Extended_Pictographic}_][\p{L}\p{N}\p{Extended_Pictographic}\p{Pd}+_. ]*$/u;
const TAKEN = 'has already been taken';
/** The attributes of `PUT /projects/:id` the sandbox serves: Grape's `at_least_one_of` names them when none is given. */
const EDITABLE = ['name', 'path', 'description', 'request_access_enabled'];

export function validProjectPath(path: string): boolean {
  return /^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/.test(path) && !/\.(git|atom)$/.test(path);
}

/**
 * A person renaming or moving a project through the forge's own API (GitLab's Projects API, "Edit a project" and
 * "Transfer a project to a new namespace"): the project keeps its id and everything it holds, its old full path
 * redirects to it, as the forge's redirect routes do.
 */
export function registerProjectEditRoutes(router: Router): void {
  router
    .put('/projects/:id', (ctx) => {
      // Grape checks the parameters before the endpoint looks the project up.
      if (!EDITABLE.some((name) => param(ctx, name) !== undefined)) {
        throw paramError(`${EDITABLE.join(', ')} are missing, at least one parameter must be provided`);
      }
      const [name, path, description] = [param(ctx, 'name'), param(ctx, 'path'), param(ctx, 'description')];
      const requestAccess = boolParam(ctx, 'request_access_enabled');
      const project = findProject(ctx, MAINTAINER);
      const user = currentUser(ctx);
      // Renaming needs the forge's `rename_project` (owner); the rest `admin_project` (maintainer).
      if (name && projectLevel(ctx.state, user, project) < OWNER) throw forbidden();
      checkNameAndPath(ctx, project, name, path);
      if (name !== undefined) project.name = name;
      if (path !== undefined) ctx.state.namespaces.moveProject(project, { path });
      if (description !== undefined) project.description = description;
      if (requestAccess !== undefined) project.request_access_enabled = requestAccess;
      return ok(new ProjectPresenter(ctx.state, ctx.baseUrl).project(project, user));
    })
    .put('/projects/:id/transfer', (ctx) => {
      const ref = requiredParam(ctx, 'namespace');
      const project = findProject(ctx, OWNER);
      const target = findVisibleNamespace(ctx, ref);
      const refusal = transferRefusal(ctx, project, target);
      if (refusal)
        throw new ApiError(400, {
          message: `Failed to transfer project {:new_namespace=>[${JSON.stringify(refusal)}]}`,
        });
      transfer(ctx, project, target);
      return ok(new ProjectPresenter(ctx.state, ctx.baseUrl).project(project, currentUser(ctx)));
    });
}

/** The model's validations: the formats, then a name or path another project (or a subgroup) of the namespace has. */
function checkNameAndPath(
  ctx: RequestContext,
  project: ProjectRecord,
  name: string | undefined,
  path: string | undefined,
): void {
  const errors: Record<string, string[]> = {};
  if (name !== undefined) {
    if (name === '') errors.name = ["can't be blank"];
    else if (!NAME_FORMAT.test(name)) errors.name = [NAME_MESSAGE];
    else if (siblings(ctx, project).some((p) => p.name === name)) errors.name = [TAKEN];
  }
  if (path !== undefined) {
    if (path === '') errors.path = ["can't be blank"];
    else if (!validProjectPath(path)) errors.path = [PROJECT_PATH_MESSAGE];
    else if (pathTaken(ctx, project.namespace_id, path, project)) errors.path = [TAKEN];
  }
  if (Object.keys(errors).length > 0) throw validationError(errors);
}

function siblings(ctx: RequestContext, project: ProjectRecord): ProjectRecord[] {
  return [...ctx.state.projects.values()].filter((p) => p.namespace_id === project.namespace_id && p.id !== project.id);
}

/** Routes are unique whatever the case: another project's or a subgroup's path in that namespace. */
function pathTaken(ctx: RequestContext, namespace: number, path: string, except: ProjectRecord): boolean {
  const lower = path.toLowerCase();
  const sameProject = [...ctx.state.projects.values()].some(
    (p) => p.id !== except.id && p.namespace_id === namespace && p.path.toLowerCase() === lower,
  );
  return (
    sameProject ||
    [...ctx.state.groups.values()].some((g) => g.parent_id === namespace && g.path.toLowerCase() === lower)
  );
}

/**
 * `Projects::TransferService`'s refusals, in its order, as the text the API wraps in `Failed to transfer project`:
 * the same namespace, a target the caller may not create projects in (`transfer_projects`: maintainer of a group,
 * the owner of a personal namespace), a name or path taken there, image tags leaving their top-level namespace.
 */
function transferRefusal(ctx: RequestContext, project: ProjectRecord, target: Namespace): string | undefined {
  const user = currentUser(ctx);
  const targetId = namespaceId(target);
  if (targetId === project.namespace_id) return 'Project is already in this namespace.';
  const allowed =
    target.kind === 'group'
      ? groupLevel(ctx.state, user, target.group) >= MAINTAINER
      : user.is_admin || target.user.id === user.id;
  if (!allowed) return "You don't have permission to transfer projects into that namespace.";
  const nameTaken = [...ctx.state.projects.values()].some(
    (p) => p.namespace_id === targetId && p.name === project.name,
  );
  if (nameTaken || pathTaken(ctx, targetId, project.path, project))
    return 'Project with same name or path in target namespace already exists';
  // The registry's GitLab API (as on GitLab.com) moves images within one top-level namespace, not out of it.
  if (hasImageTags(ctx, project) && rootOf(ctx, project.namespace_id) !== rootOf(ctx, targetId)) {
    return 'Project cannot be transferred to a different top-level namespace, because image tags are present in its container registry';
  }
  return undefined;
}

function hasImageTags(ctx: RequestContext, project: ProjectRecord): boolean {
  return [...ctx.state.repositories.values()].some((r) => r.project_id === project.id && r.tags.size > 0);
}

function rootOf(ctx: RequestContext, namespace: number): number {
  const group = ctx.state.groups.get(namespace);
  return group ? ctx.state.groupChain(group).at(-1)!.id : namespace;
}

/**
 * Moves the project: its visibility is lowered to a more private target group's, and the owner of the personal
 * namespace it leaves stays its owner (the forge gave them an owner membership when they made it).
 */
function transfer(ctx: RequestContext, project: ProjectRecord, target: Namespace): void {
  const { state } = ctx;
  const formerOwner: UserRecord | undefined = state.groups.has(project.namespace_id)
    ? undefined
    : state.namespaceOwnerUser(project.namespace_id);
  if (formerOwner && !state.member('project', project.id, formerOwner.id)) {
    state.members.push({
      source: 'project',
      source_id: project.id,
      user_id: formerOwner.id,
      access_level: OWNER,
      created_at: project.created_at,
    });
  }
  state.namespaces.moveProject(project, { namespace_id: namespaceId(target) });
  if (
    target.kind === 'group' &&
    VISIBILITIES.indexOf(project.visibility) > VISIBILITIES.indexOf(target.group.visibility)
  ) {
    project.visibility = target.group.visibility;
  }
}
