/** ISO 8601 date-time as the forge sends it; some carry a numeric offset instead of `Z`. */
export type Timestamp = string;
/** A calendar date, `YYYY-MM-DD` (e.g. `last_activity_on`). */
export type DateString = string;

/** A user's `state` as the Users API shows it. */
export const USER_STATES = ['active', 'blocked'] as const;
export type UserState = (typeof USER_STATES)[number];

/** Who may see a project or group (GitLab's public API docs, Projects and Groups API), least visible first. */
export const VISIBILITIES = ['private', 'internal', 'public'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** The `sort` parameter of listings that take `order_by`. */
export const SORT_DIRECTIONS = ['asc', 'desc'] as const;
export type SortDirection = (typeof SORT_DIRECTIONS)[number];
