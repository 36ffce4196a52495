import { endpoint, type GroupId, type ProjectId } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { projectShape, simpleProjectShape } from './shapes';
import type { ListGroupProjectsParams, ListProjectsParams, Project, SimpleProject } from '../types/projects';

/**
 * Projects (GitLab's public API docs, Projects API and the Groups API's project listing; beyond the forge's API
 * specification). `simple: true` answers `SimpleProject`s, which lack `archived` and `visibility`.
 */
export class ProjectsResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Every project the caller can see (`membership: true`: those they belong to). With `pagination: 'keyset'` (and
   * `order_by: 'id'`, the only order the forge pages by keyset) the listing follows each page's `rel="next"` link,
   * which is how the forge serves more than its offset limit of projects.
   */
  all(params: ListProjectsParams & { simple: true }, page?: PageOptions<SimpleProject>): Paginated<SimpleProject>;
  all(params?: ListProjectsParams & { simple?: false }, page?: PageOptions<Project>): Paginated<Project>;
  all(
    params: ListProjectsParams = {},
    page?: PageOptions<Project | SimpleProject>,
  ): Paginated<Project | SimpleProject> {
    return this.transport.paginate<Project | SimpleProject>(
      {
        method: 'GET',
        endpoint: endpoint`projects`,
        query: { ...params },
        shape: params.simple ? simpleProjectShape : projectShape,
      },
      page,
    );
  }

  /** By id or full path (`acme/api`). */
  show(project: ProjectId): Promise<Project> {
    return this.transport.json<Project>({
      method: 'GET',
      endpoint: endpoint`projects/${project}`,
      shape: projectShape,
    });
  }

  /**
   * Projects of a group: its own, with `include_subgroups: true` those of every subgroup too, and (unless
   * `with_shared: false`) those shared with it. Archived projects are listed unless `archived: false`.
   */
  allForGroup(
    group: GroupId,
    params: ListGroupProjectsParams & { simple: true },
    page?: PageOptions<SimpleProject>,
  ): Paginated<SimpleProject>;
  allForGroup(
    group: GroupId,
    params?: ListGroupProjectsParams & { simple?: false },
    page?: PageOptions<Project>,
  ): Paginated<Project>;
  allForGroup(
    group: GroupId,
    params: ListGroupProjectsParams = {},
    page?: PageOptions<Project | SimpleProject>,
  ): Paginated<Project | SimpleProject> {
    return this.transport.paginate<Project | SimpleProject>(
      {
        method: 'GET',
        endpoint: endpoint`groups/${group}/projects`,
        query: { ...params },
        shape: params.simple ? simpleProjectShape : projectShape,
      },
      page,
    );
  }
}
