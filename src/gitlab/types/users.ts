import type { DateString, SortDirection, Timestamp, UserState } from './common';

/** What a normal caller gets in lists (GitLab's "Users API"). */
export interface UserSummary {
  id: number;
  username: string;
  name: string;
  state: UserState;
  avatar_url: string;
  web_url: string;
}

/** The profile every caller may see, in both the public and the administrator views. */
export interface UserProfile {
  bio: string;
  bio_html: string;
  location: string | null;
  public_email: string;
  skype: string;
  linkedin: string;
  twitter: string;
  website_url: string;
  organization: string;
  job_title: string;
}

/** A single user as a normal caller sees them. */
export interface PublicUser extends UserSummary, UserProfile {
  created_at: Timestamp;
  bot: boolean;
  followers: number;
  following: number;
}

export interface Identity {
  provider: string;
  extern_uid: string;
  /** Only for provider `group_saml`, higher tier. */
  saml_provider_id?: number;
}

/** The administrator view in lists. */
export interface AdminUserListItem extends UserSummary, UserProfile {
  email: string;
  created_at: Timestamp;
  is_admin: boolean;
  last_sign_in_at: Timestamp | null;
  confirmed_at: Timestamp;
  theme_id: number;
  last_activity_on: DateString;
  color_scheme_id: number;
  projects_limit: number;
  current_sign_in_at: Timestamp;
  /** Administrator notes. */
  note: string;
  identities: Identity[];
  can_create_group: boolean;
  can_create_project: boolean;
  two_factor_enabled: boolean;
  external: boolean;
  private_profile: boolean;
  current_sign_in_ip: string;
  last_sign_in_ip: string;
  /** Higher tier. */
  shared_runners_minutes_limit?: number;
  extra_shared_runners_minutes_limit?: number;
  is_auditor?: boolean;
  using_license_seat?: boolean;
}

/** The administrator view of a single user. */
export interface AdminUser extends AdminUserListItem {
  commit_email: string;
  /** Enterprise edition only. */
  plan?: string;
  trial?: boolean;
  sign_in_count: number;
}

/** `GET /user` for a normal caller. */
export interface CurrentUser extends PublicUser {
  email: string;
  last_sign_in_at: Timestamp | null;
  confirmed_at: Timestamp;
  theme_id: number;
  last_activity_on: DateString;
  color_scheme_id: number;
  projects_limit: number;
  current_sign_in_at: Timestamp;
  identities: Identity[];
  can_create_group: boolean;
  can_create_project: boolean;
  two_factor_enabled: boolean;
  external: boolean;
  private_profile: boolean;
}

/** `GET /user` for an administrator. */
export interface CurrentAdminUser extends CurrentUser {
  is_admin: boolean;
  commit_email: string;
  current_sign_in_ip: string;
  last_sign_in_ip: string;
}

/** Which view came back depends on who asks; the administrator views carry `is_admin`. */
export function isAdminView<T extends object>(user: T): user is T & { is_admin: boolean } {
  return 'is_admin' in user;
}

/** The `order_by` of `GET /users`. */
export const USER_ORDER_BY = ['id', 'name', 'username', 'created_at', 'updated_at'] as const;
export type UserOrderBy = (typeof USER_ORDER_BY)[number];

/** List filters for `GET /users`. Filters marked "administrators" are ignored for others. */
export interface ListUsersParams {
  /** Matches name or primary email. */
  search?: string;
  /** Exact username, case insensitive. */
  username?: string;
  /** Only `true` is supported by the forge. */
  active?: true;
  blocked?: true;
  external?: true;
  /** Omits the alert and support bots; project bots remain. */
  exclude_internal?: boolean;
  exclude_external?: boolean;
  /** Administrators; default `id`. */
  order_by?: UserOrderBy;
  /** Administrators; default `desc`. */
  sort?: SortDirection;
  /** Administrators; default all. */
  two_factor?: 'enabled' | 'disabled';
  without_projects?: boolean;
  admins?: boolean;
  /** Administrators: together with `provider`. */
  extern_uid?: string;
  provider?: string;
  created_before?: Timestamp | Date;
  created_after?: Timestamp | Date;
  /** Administrators: sent as `custom_attributes[key]=value`. */
  custom_attributes?: Readonly<Record<string, string>>;
  with_custom_attributes?: boolean;
}

export interface ShowUserParams {
  with_custom_attributes?: boolean;
}

export interface CurrentUserParams {
  /** Administrators: the user ID to act as. */
  sudo?: number;
}

/** Fields create and update share. */
export interface UserProfileParams {
  admin?: boolean;
  bio?: string;
  can_create_group?: boolean;
  color_scheme_id?: number;
  extern_uid?: string;
  external?: boolean;
  extra_shared_runners_minutes_limit?: number;
  group_id_for_saml?: number;
  linkedin?: string;
  location?: string;
  note?: string;
  organization?: string;
  password?: string;
  provider?: string;
  skype?: string;
  twitter?: string;
  website_url?: string;
  /** `null` is converted to false. */
  private_profile?: boolean | null;
  projects_limit?: number;
  /** `null` inherits the system default, 0 is unlimited. */
  shared_runners_minutes_limit?: number | null;
  theme_id?: number;
  view_diffs_file_by_file?: boolean;
}

/**
 * `POST /users` (administrators). One of `password`, `reset_password`, `force_random_password` is required; the
 * type demands it.
 */
export type CreateUserParams = UserProfileParams & {
  email: string;
  name: string;
  username: string;
  skip_confirmation?: boolean;
} & (
    | { password: string; reset_password?: boolean; force_random_password?: boolean }
    | { reset_password: true; force_random_password?: boolean }
    | { force_random_password: true; reset_password?: boolean }
  );

/** `PUT /users/:id` (administrators): every create field is optional, plus these. */
export interface EditUserParams extends UserProfileParams {
  email?: string;
  name?: string;
  username?: string;
  /** Must already be verified. */
  public_email?: string;
  skip_reconfirmation?: boolean;
}

export interface RemoveUserParams {
  /** Also deletes contributions (instead of moving them to the ghost user) and groups solely owned by the user. */
  hard_delete?: boolean;
}

/** A user's status; with no status set, `emoji` and `message` are null. */
export interface UserStatus {
  emoji: string | null;
  availability: string;
  message: string | null;
  message_html: string;
  clear_status_at: Timestamp | null;
}

export type ClearStatusAfter = '30_minutes' | '3_hours' | '8_hours' | '1_day' | '3_days' | '7_days' | '30_days';

/** `PUT /user/status`. Both `emoji` and `message` empty clears the status; omitting `clear_status_after` clears it. */
export interface SetUserStatusParams {
  /** Default `speech_balloon`. */
  emoji?: string;
  message?: string;
  clear_status_after?: ClearStatusAfter;
}

/** `PUT /user/preferences`'s answer. */
export interface UserPreferences {
  id: number;
  user_id: number;
  view_diffs_file_by_file: boolean;
}

export interface EditUserPreferencesParams {
  view_diffs_file_by_file: boolean;
}

/** `GET /user_counts`. */
export interface UserCounts {
  /** Active merge requests assigned to the caller. */
  merge_requests: number;
}
