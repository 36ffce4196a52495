import { endpoint, type ProjectId } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { projectHookShape } from './shapes';
import type { CreateProjectHookParams, EditProjectHookParams, ProjectHook } from '../types/hooks';

/**
 * Project webhooks (GitLab's public API docs, "Project webhooks API"; beyond the forge's API specification).
 * Maintainers and administrators only: a developer gets a ForbiddenError, a caller who cannot see the project a
 * NotFoundError. The secret `token` travels only in the JSON body of `create`/`edit` (never in a URL, so it cannot
 * reach a log line or an ApiError's path) and the forge never sends it back.
 */
export class ProjectHooksResource {
  constructor(private readonly transport: Transport) {}

  /** The project's hooks, oldest first; list entries carry no `url_variables`/`custom_headers`. */
  all(project: ProjectId, page?: PageOptions<ProjectHook>): Paginated<ProjectHook> {
    return this.transport.paginate<ProjectHook>(
      { method: 'GET', endpoint: endpoint`projects/${project}/hooks`, shape: projectHookShape },
      page,
    );
  }

  show(project: ProjectId, hookId: number): Promise<ProjectHook> {
    return this.transport.json<ProjectHook>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/hooks/${hookId}`,
      shape: projectHookShape,
    });
  }

  /** A URL that is not http(s) is a ValidationError (422 `Invalid url given`). */
  create(project: ProjectId, params: CreateProjectHookParams): Promise<ProjectHook> {
    return this.transport.json<ProjectHook>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/hooks`,
      body: params,
      shape: projectHookShape,
    });
  }

  /** Changes only the given fields; a new `url` without `token` clears the stored token (the forge's rule). */
  edit(project: ProjectId, hookId: number, params: EditProjectHookParams): Promise<ProjectHook> {
    return this.transport.json<ProjectHook>({
      method: 'PUT',
      endpoint: endpoint`projects/${project}/hooks/${hookId}`,
      body: params,
      shape: projectHookShape,
    });
  }

  async remove(project: ProjectId, hookId: number): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/hooks/${hookId}`,
    });
  }
}
