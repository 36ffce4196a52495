import { endpoint, type GroupId } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { groupShape } from './shapes';
import type { Group, GroupDetail, ListGroupsParams, ListSubgroupsParams, ShowGroupParams } from '../types/groups';

/**
 * Groups (GitLab's public API docs, Groups API; beyond the forge's API specification). A group's projects are
 * `client.projects.allForGroup`.
 */
export class GroupsResource {
  constructor(private readonly transport: Transport) {}

  /** The groups the caller belongs to; every group they can see with `all_available: true` (administrators: all). */
  all(params: ListGroupsParams = {}, page?: PageOptions<Group>): Paginated<Group> {
    return this.transport.paginate<Group>(
      { method: 'GET', endpoint: endpoint`groups`, query: { ...params }, shape: groupShape },
      page,
    );
  }

  /** By id or full path (`acme/platform`). */
  show(group: GroupId, params: ShowGroupParams = {}): Promise<GroupDetail> {
    return this.transport.json<GroupDetail>({
      method: 'GET',
      endpoint: endpoint`groups/${group}`,
      query: { ...params },
      shape: groupShape,
    });
  }

  /** The group's direct subgroups, filtered as `all`. */
  subgroups(group: GroupId, params: ListSubgroupsParams = {}, page?: PageOptions<Group>): Paginated<Group> {
    return this.transport.paginate<Group>(
      { method: 'GET', endpoint: endpoint`groups/${group}/subgroups`, query: { ...params }, shape: groupShape },
      page,
    );
  }

  /** Every group below the group, at any depth, filtered as `all`. */
  descendantGroups(group: GroupId, params: ListSubgroupsParams = {}, page?: PageOptions<Group>): Paginated<Group> {
    return this.transport.paginate<Group>(
      { method: 'GET', endpoint: endpoint`groups/${group}/descendant_groups`, query: { ...params }, shape: groupShape },
      page,
    );
  }
}
