import type { AccessLevel } from './access-levels';
import type { SortDirection, Timestamp, Visibility } from './common';
import type { ProjectSummary } from './jobs';
import type { NamespaceKind } from './namespaces';
import type { UserSummary } from './users';

/**
 * Projects, as GitLab's public API docs describe them (Projects API, "List all projects", "Get a single project",
 * and the Groups API's "List a group's projects"). The forge's API specification does not cover them.
 */

/** The namespace a project lives in (the forge's `NamespaceBasic`). */
export interface ProjectNamespace {
  id: number;
  name: string;
  path: string;
  kind: NamespaceKind;
  full_path: string;
  parent_id: number | null;
  avatar_url: string | null;
  web_url: string;
}

/**
 * What `simple=true` keeps of a project (the forge's `BasicProjectDetails`). It has no `archived` and no
 * `visibility`: a caller that filters on those asks the forge to (`archived=false`) or reads full records.
 */
export interface SimpleProject extends ProjectSummary {
  /** Absent when the caller may not read the project's code. */
  default_branch?: string;
  tag_list: string[];
  topics: string[];
  ssh_url_to_repo: string;
  http_url_to_repo: string;
  web_url: string;
  /** Present when the caller may read the code; null without a README. */
  readme_url?: string | null;
  forks_count?: number;
  avatar_url: string | null;
  star_count: number;
  last_activity_at: Timestamp;
  namespace: ProjectNamespace;
}

/** The caller's membership, in `permissions`; `notification_level` is the forge's numeric setting. */
export interface ProjectPermission {
  access_level: AccessLevel;
  notification_level: number;
}

/** A group the project is shared with. */
export interface ProjectGroupShare {
  group_id: number;
  group_name: string;
  group_full_path: string;
  group_access_level: AccessLevel;
  expires_at: string | null;
}

/** A project as an authenticated caller sees it without `simple`. */
export interface Project extends SimpleProject {
  visibility: Visibility;
  /** Archived projects are read-only: no CI, no registry deletions. */
  archived: boolean;
  /** Personal projects only: the user whose namespace holds the project. */
  owner?: UserSummary;
  empty_repo: boolean;
  request_access_enabled: boolean;
  open_issues_count?: number;
  shared_with_groups: ProjectGroupShare[];
  /** The caller's own access: as a project member, and through the project's group. */
  permissions?: {
    project_access: ProjectPermission | null;
    group_access: ProjectPermission | null;
  };
}

export const PROJECT_ORDER_BY = ['id', 'name', 'path', 'created_at', 'updated_at', 'last_activity_at'] as const;
export type ProjectOrderBy = (typeof PROJECT_ORDER_BY)[number];

/** Filters shared by `GET /projects` and `GET /groups/:id/projects`. */
export interface ProjectFilters {
  /** Omitted: archived and active projects alike. */
  archived?: boolean;
  /** Matches name, path or description, case-insensitive. */
  search?: string;
  visibility?: Visibility;
  /** Projects where the caller has at least this role. */
  min_access_level?: AccessLevel;
  /** Projects owned by the caller: their personal projects and those of groups they own. */
  owned?: boolean;
  /** Projects with an id above this one. */
  id_after?: number;
  /** Projects with an id below this one. */
  id_before?: number;
  /** Fewer fields per project (`SimpleProject`). */
  simple?: boolean;
}

/** Offset pagination, in any order (default `created_at`, `desc`). */
export interface OffsetProjectOrder {
  pagination?: 'offset';
  order_by?: ProjectOrderBy;
  sort?: SortDirection;
}

/**
 * Keyset pagination: the forge offers it on `GET /projects` for `order_by=id` only. Each page links to the next
 * (`Link: rel="next"`, with `id_after` or `id_before`) and carries no totals; a listing ends at an empty page.
 */
export interface KeysetProjectOrder {
  pagination: 'keyset';
  order_by: 'id';
  sort?: SortDirection;
}

export type ListProjectsParams = ProjectFilters & {
  /** Projects the caller is a member of (directly or through a group); omitted, every project they can see. */
  membership?: boolean;
} & (OffsetProjectOrder | KeysetProjectOrder);

export interface ListGroupProjectsParams extends ProjectFilters {
  /** Projects of every subgroup too (the forge's default: only the group's own). */
  include_subgroups?: boolean;
  /** Projects shared with the group too; the forge's default is `true`. */
  with_shared?: boolean;
  order_by?: ProjectOrderBy;
  sort?: SortDirection;
}
