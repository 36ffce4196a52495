import type { AccessLevel } from './access-levels';
import type { SortDirection, Timestamp, Visibility } from './common';
import type { Project } from './projects';

/**
 * Groups, as GitLab's public API docs describe them (Groups API: "List groups", "Details of a group", "List a
 * group's subgroups", "List a group's descendant groups"). The forge's API specification does not cover them.
 */

export interface Group {
  id: number;
  name: string;
  path: string;
  description: string;
  visibility: Visibility;
  lfs_enabled: boolean;
  avatar_url: string | null;
  web_url: string;
  request_access_enabled: boolean;
  /** Names from the top-level group down, `Acme / Platform`. */
  full_name: string;
  full_path: string;
  /** Null for a top-level group. */
  parent_id: number | null;
  created_at: Timestamp;
}

/** `GET /groups/:id`: the group's own projects and those shared with it, unless `with_projects=false`. */
export interface GroupDetail extends Group {
  projects?: Project[];
  shared_projects?: Project[];
}

export const GROUP_ORDER_BY = ['name', 'path', 'id'] as const;
export type GroupOrderBy = (typeof GROUP_ORDER_BY)[number];

/** Filters of `GET /groups`, `.../subgroups` and `.../descendant_groups`. */
export interface ListSubgroupsParams {
  /**
   * Every group the caller can see; otherwise only those they are a member of. The forge's default is `false` for
   * users and `true` for administrators.
   */
  all_available?: boolean;
  /** Matches name or path, case-insensitive. */
  search?: string;
  /** Groups the caller owns. */
  owned?: boolean;
  /** Groups where the caller has at least this role. */
  min_access_level?: AccessLevel;
  skip_groups?: number[];
  /** Default `name`. */
  order_by?: GroupOrderBy;
  /** Default `asc`. */
  sort?: SortDirection;
}

export interface ListGroupsParams extends ListSubgroupsParams {
  /** Only groups without a parent. */
  top_level_only?: boolean;
}

export interface ShowGroupParams {
  /** `false` leaves out `projects` and `shared_projects`. */
  with_projects?: boolean;
}
