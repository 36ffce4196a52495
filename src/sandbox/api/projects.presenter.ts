import { ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import type { GroupRecord, ProjectRecord, UserRecord } from '../state';
import { Presenter } from './presenter';

/** A project as the forge's Projects API shows it: the short view (`simple=true`) and the caller's full view. */
export class ProjectPresenter extends Presenter {
  /** `simple=true` (the forge's `BasicProjectDetails`): no `archived`, no `visibility`. */
  simpleProject(project: ProjectRecord): Record<string, unknown> {
    const fullPath = this.state.projectFullPath(project);
    return {
      ...this.projectSummary(project),
      default_branch: project.default_branch,
      tag_list: [],
      topics: [],
      ssh_url_to_repo: `git@${new URL(this.baseUrl).hostname}:${fullPath}.git`,
      http_url_to_repo: `${this.baseUrl}/${fullPath}.git`,
      web_url: `${this.baseUrl}/${fullPath}`,
      // The sandbox keeps no repository content, so no README either.
      readme_url: null,
      forks_count: 0,
      avatar_url: null,
      star_count: 0,
      last_activity_at: project.last_activity_at,
      namespace: this.projectNamespace(project.namespace_id),
    };
  }

  /** A project as `viewer` sees it without `simple` (the forge's `ProjectWithAccess`). */
  project(project: ProjectRecord, viewer: UserRecord): Record<string, unknown> {
    const owner = this.state.groups.has(project.namespace_id)
      ? undefined
      : this.state.namespaceOwnerUser(project.namespace_id);
    const group = this.state.groups.get(project.namespace_id);
    const projectAccess = this.state.member('project', project.id, viewer.id)?.access_level;
    const groupAccess = group ? this.state.groupAccessLevel(viewer, group) : 0;
    const permission = (level: number | undefined) => (level ? { access_level: level, notification_level: 3 } : null);
    return {
      ...this.simpleProject(project),
      visibility: project.visibility,
      archived: project.archived,
      ...(owner ? { owner: this.userSummary(owner) } : {}),
      empty_repo: false,
      request_access_enabled: project.request_access_enabled,
      shared_with_groups: [...(this.state.projectGroupLinks.get(project.id) ?? [])]
        .map((id) => this.state.groups.get(id))
        .filter((g): g is GroupRecord => g !== undefined)
        // A world file's share names no role; the sandbox shows it as developer.
        .map((g) => ({
          group_id: g.id,
          group_name: g.name,
          group_full_path: this.state.groupFullPath(g),
          group_access_level: ACCESS_LEVELS.developer,
          expires_at: null,
        })),
      permissions: { project_access: permission(projectAccess), group_access: permission(groupAccess) },
    };
  }

  /** The namespace embedded in a project (the forge's `NamespaceBasic`). */
  private projectNamespace(namespaceId: number): Record<string, unknown> {
    const group = this.state.groups.get(namespaceId);
    const fullPath = this.state.namespaceFullPath(namespaceId);
    return {
      id: namespaceId,
      name: group ? group.name : fullPath,
      path: group ? group.path : fullPath,
      kind: group ? 'group' : 'user',
      full_path: fullPath,
      parent_id: group ? group.parent_id : null,
      avatar_url: null,
      web_url: group ? `${this.baseUrl}/groups/${fullPath}` : `${this.baseUrl}/${fullPath}`,
    };
  }
}
