import type { DateString, Timestamp, UserState } from './common';

/** Spec 02 §2: what a normal caller gets in lists. */
export interface UserSummary {
  id: number;
  username: string;
  name: string;
  state: UserState;
  avatar_url: string;
  web_url: string;
}

/** The profile every caller may see, in both the public and the administrator views (spec 02 §2). */
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

/** Spec 02 §2: a single user as a normal caller sees them. */
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

/** Spec 02 §2: the administrator view in lists. */
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

/** Spec 02 §2: the administrator view of a single user. */
export interface AdminUser extends AdminUserListItem {
  commit_email: string;
  /** Enterprise edition only. */
  plan?: string;
  trial?: boolean;
  sign_in_count: number;
}

/** `GET /user` for a normal caller (spec 02 §2, current user). */
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

/** Spec 02 §4, list filters for `GET /users`. Filters marked "administrators" are ignored for others. */
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
  order_by?: 'id' | 'name' | 'username' | 'created_at' | 'updated_at';
  /** Administrators; default `desc`. */
  sort?: 'asc' | 'desc';
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
