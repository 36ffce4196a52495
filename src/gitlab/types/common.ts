/** ISO 8601 date-time as the forge sends it (spec 01 §1.4); some carry a numeric offset instead of `Z`. */
export type Timestamp = string;
/** A calendar date, `YYYY-MM-DD` (e.g. `last_activity_on`, spec 02 §2). */
export type DateString = string;

/** Spec 02 §3.1. */
export type UserState = 'active' | 'blocked';

/** Spec 02 §2, access requests: `50` owner is valid for groups only. */
export const ACCESS_LEVELS = {
  no_access: 0,
  minimal_access: 5,
  guest: 10,
  reporter: 20,
  developer: 30,
  maintainer: 40,
  owner: 50,
} as const;
export type AccessLevel = (typeof ACCESS_LEVELS)[keyof typeof ACCESS_LEVELS];
export type ProjectAccessLevel = Exclude<AccessLevel, 50>;
export type AccessLevelName = keyof typeof ACCESS_LEVELS;

/** Who may see a project or group (GitLab's public API docs, Projects and Groups API). */
export type Visibility = 'private' | 'internal' | 'public';

/** The `sort` parameter of listings that take `order_by`. */
export type SortDirection = 'asc' | 'desc';
