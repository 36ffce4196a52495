import type { GroupRecord, UserRecord } from '../state';
import { Presenter } from './presenter';

/** A namespace as the forge's Namespaces API shows it: a group's, or a user's personal one. */
export class NamespacePresenter extends Presenter {
  groupNamespace(group: GroupRecord, showMemberCount: boolean): Record<string, unknown> {
    const fullPath = this.state.groupFullPath(group);
    return {
      id: group.id,
      name: group.name,
      path: group.path,
      kind: 'group',
      full_path: fullPath,
      parent_id: group.parent_id,
      avatar_url: null,
      web_url: `${this.baseUrl}/groups/${fullPath}`,
      ...(showMemberCount ? { members_count_with_descendants: this.groupMemberIds(group).size } : {}),
      billable_members_count: this.billableMembers(group),
      plan: 'default',
      trial_ends_on: null,
      trial: false,
    };
  }

  userNamespace(user: UserRecord): Record<string, unknown> {
    return {
      id: user.namespace_id,
      name: user.username,
      path: user.username,
      kind: 'user',
      full_path: user.username,
      parent_id: null,
      avatar_url: null,
      web_url: `${this.baseUrl}/${user.username}`,
      billable_members_count: 1,
      plan: 'default',
      trial_ends_on: null,
      trial: false,
    };
  }

  private groupMemberIds(group: GroupRecord): Set<number> {
    const groupIds = new Set(this.state.groupTree(group).map((g) => g.id));
    const projectIds = new Set(this.state.projectsInGroupTree(group).map((p) => p.id));
    return new Set(
      this.state.members
        .filter((m) => (m.source === 'group' ? groupIds.has(m.source_id) : projectIds.has(m.source_id)))
        .map((m) => m.user_id),
    );
  }

  /** All members minus blocked users and bots (the forge's "all users minus blocked users"). */
  private billableMembers(group: GroupRecord): number {
    return [...this.groupMemberIds(group)].filter((id) => {
      const user = this.state.users.get(id);
      return user !== undefined && user.state === 'active' && user.user_type === 'human';
    }).length;
  }
}
