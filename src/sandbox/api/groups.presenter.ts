import type { GroupRecord } from '../state';
import { Presenter } from './presenter';

/** A group as the forge's Groups API shows it. */
export class GroupPresenter extends Presenter {
  /** A group in lists and as the base of the detail (the forge's `Entities::Group`). */
  group(group: GroupRecord): Record<string, unknown> {
    const fullPath = this.state.groupFullPath(group);
    return {
      id: group.id,
      web_url: `${this.baseUrl}/groups/${fullPath}`,
      name: group.name,
      path: group.path,
      description: group.description,
      visibility: group.visibility,
      lfs_enabled: true,
      avatar_url: null,
      request_access_enabled: group.request_access_enabled,
      full_name: this.state.groupFullName(group),
      full_path: fullPath,
      created_at: group.created_at,
      parent_id: group.parent_id,
    };
  }
}
