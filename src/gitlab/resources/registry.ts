import { endpoint, type GroupId, type ProjectId } from '../transport/endpoint';
import { BulkDeleteAlreadyRequestedError, ValidationError } from '../transport/errors';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { registryRepositoryShape, registryTagShape, registryTagSummaryShape } from './shapes';
import type {
  BulkDeleteTagsParams,
  ListRegistryRepositoriesParams,
  RegistryRepository,
  RegistryTag,
  RegistryTagSummary,
} from '../types/registry';

/** The forge's wording for the once-an-hour bulk deletion guard. */
const ALREADY_REQUESTED = /already been made|at most once an hour/i;

/** GitLab's "Container registry API". */
export class RegistryResource {
  constructor(private readonly transport: Transport) {}

  /** Repositories of a project. */
  all(
    project: ProjectId,
    params: ListRegistryRepositoriesParams = {},
    page?: PageOptions<RegistryRepository>,
  ): Paginated<RegistryRepository> {
    return this.transport.paginate<RegistryRepository>(
      {
        method: 'GET',
        endpoint: endpoint`projects/${project}/registry/repositories`,
        query: { ...params },
        shape: registryRepositoryShape,
      },
      page,
    );
  }

  /** Repositories of a group. */
  allForGroup(
    group: GroupId,
    params: ListRegistryRepositoriesParams = {},
    page?: PageOptions<RegistryRepository>,
  ): Paginated<RegistryRepository> {
    return this.transport.paginate<RegistryRepository>(
      {
        method: 'GET',
        endpoint: endpoint`groups/${group}/registry/repositories`,
        query: { ...params },
        shape: registryRepositoryShape,
      },
      page,
    );
  }

  /** `GET /registry/repositories/:id`. */
  show(repositoryId: number | string, params: ListRegistryRepositoriesParams = {}): Promise<RegistryRepository> {
    return this.transport.json<RegistryRepository>({
      method: 'GET',
      endpoint: endpoint`registry/repositories/${repositoryId}`,
      query: { ...params },
      shape: registryRepositoryShape,
    });
  }

  /** Schedules deletion of a repository; the work finishes after the call returns. */
  async remove(project: ProjectId, repositoryId: number): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/registry/repositories/${repositoryId}`,
    });
  }

  allTags(
    project: ProjectId,
    repositoryId: number,
    page?: PageOptions<RegistryTagSummary>,
  ): Paginated<RegistryTagSummary> {
    return this.transport.paginate<RegistryTagSummary>(
      {
        method: 'GET',
        endpoint: endpoint`projects/${project}/registry/repositories/${repositoryId}/tags`,
        shape: registryTagSummaryShape,
      },
      page,
    );
  }

  showTag(project: ProjectId, repositoryId: number, tagName: string): Promise<RegistryTag> {
    return this.transport.json<RegistryTag>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/registry/repositories/${repositoryId}/tags/${tagName}`,
      shape: registryTagShape,
    });
  }

  /** Deletes one tag; blobs stay until the registry's garbage collection. */
  async removeTag(project: ProjectId, repositoryId: number, tagName: string): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/registry/repositories/${repositoryId}/tags/${tagName}`,
    });
  }

  /**
   * Schedules bulk tag deletion. Parameters travel in the query string: DELETE bodies are dropped by some proxies.
   * A second call on the same repository within the hour fails with BulkDeleteAlreadyRequestedError (a 400), so the
   * transport never repeats it once it may have reached the forge (a 502/503/504 from a proxy may follow a forge that
   * accepted it, and the repeat would then be refused, or worse, use up the next hour's call).
   */
  async removeTags(project: ProjectId, repositoryId: number, params: BulkDeleteTagsParams): Promise<void> {
    try {
      await this.transport.request<unknown>({
        method: 'DELETE',
        endpoint: endpoint`projects/${project}/registry/repositories/${repositoryId}/tags`,
        query: { ...params },
        idempotent: false,
      });
    } catch (error) {
      if (error instanceof ValidationError && ALREADY_REQUESTED.test(error.message)) {
        throw new BulkDeleteAlreadyRequestedError({
          status: error.status,
          method: error.method,
          path: error.path,
          body: error.body,
          headers: error.headers,
          message: error.message,
        });
      }
      throw error;
    }
  }
}
