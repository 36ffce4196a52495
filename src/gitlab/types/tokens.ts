import type { Timestamp } from './common';

/**
 * Personal, project and group access tokens and deploy tokens, as GitLab's public API docs describe them
 * ("Personal access tokens API", "Project access tokens API", "Group access tokens API", "Deploy tokens API"); beyond
 * the forge's API specification. A token's value comes back once, in the answer that made it (create or rotate): those
 * answers have their own types (`New…`), every other answer carries no value.
 */

/** Scopes of personal access tokens; project and group access tokens take the same minus `sudo` and `admin_mode`. */
export const ACCESS_TOKEN_SCOPES = [
  'api',
  'read_api',
  'read_user',
  'create_runner',
  'manage_runner',
  'k8s_proxy',
  'self_rotate',
  'read_repository',
  'write_repository',
  'read_registry',
  'write_registry',
  'read_virtual_registry',
  'write_virtual_registry',
  'read_observability',
  'write_observability',
  'ai_features',
  'sudo',
  'admin_mode',
] as const;
export type AccessTokenScope = (typeof ACCESS_TOKEN_SCOPES)[number];

/** What a project or group access token may be given (`Gitlab::Auth.resource_bot_scopes`). */
export type ResourceAccessTokenScope = Exclude<AccessTokenScope, 'sudo' | 'admin_mode'>;

/** `YYYY-MM-DD`: the token stops working at 00:00 UTC of that day. */
export type TokenExpiryDate = string;

/** The fields every access token shows (the forge's `PersonalAccessToken` entity). */
export interface AccessToken {
  id: number;
  name: string;
  description?: string | null;
  revoked: boolean;
  created_at: Timestamp;
  scopes: AccessTokenScope[];
  /** The token's user; for a project or group access token, its bot user. */
  user_id: number;
  last_used_at: Timestamp | null;
  /** Neither revoked nor expired. */
  active: boolean;
  /** Null: the token never expires (allowed only where the instance does not require an expiry). */
  expires_at: TokenExpiryDate | null;
}

/** A personal access token as listed and shown; listings add the addresses it was last used from. */
export interface PersonalAccessToken extends AccessToken {
  last_used_ips?: string[];
}

/** The answer to a rotation: the new token, with its value, once. */
export interface NewPersonalAccessToken extends PersonalAccessToken {
  token: string;
}

/** A project or group access token: a bot user's token with the bot's role in the project or group. */
export interface ResourceAccessToken extends AccessToken {
  access_level: number;
}

/** The answer to creating or rotating a project or group access token: with its value, once. */
export interface NewResourceAccessToken extends ResourceAccessToken {
  token: string;
}

export type AccessTokenSort =
  | 'created_asc'
  | 'created_desc'
  | 'expires_asc'
  | 'expires_desc'
  | 'last_used_asc'
  | 'last_used_desc'
  | 'name_asc'
  | 'name_desc';

/** The filters of the token listings (all optional; the forge ignores those it does not know). */
export interface AccessTokenFilters {
  created_after?: Timestamp | Date;
  created_before?: Timestamp | Date;
  /** Dates, `YYYY-MM-DD`. */
  expires_after?: TokenExpiryDate;
  expires_before?: TokenExpiryDate;
  last_used_after?: Timestamp | Date;
  last_used_before?: Timestamp | Date;
  /** True: only revoked tokens; false: only those not revoked. */
  revoked?: boolean;
  /** A part of the name, any case. */
  search?: string;
  /** `active`: neither revoked nor expired. */
  state?: 'active' | 'inactive';
  sort?: AccessTokenSort;
}

export interface ListPersonalAccessTokensParams extends AccessTokenFilters {
  /** Administrators: another user's tokens; anyone else may name only themselves (else 401). */
  user_id?: number;
}

/** Rotation takes the new expiry; without it the forge picks one that differs between versions (a week, or a year). */
export interface RotateAccessTokenParams {
  expires_at?: TokenExpiryDate;
}

export interface CreateResourceAccessTokenParams {
  name: string;
  scopes: ResourceAccessTokenScope[];
  /** At most a year ahead; the forge's default is a year. */
  expires_at?: TokenExpiryDate;
  description?: string;
  /** 10, 20, 30, 40 (the default) or 50; no higher than the creator's own. */
  access_level?: number;
}

export const DEPLOY_TOKEN_SCOPES = [
  'read_repository',
  'read_registry',
  'write_registry',
  'read_package_registry',
  'write_package_registry',
  'read_virtual_registry',
  'write_virtual_registry',
] as const;
export type DeployTokenScope = (typeof DEPLOY_TOKEN_SCOPES)[number];

/** A deploy token: it logs in to Git and the registries as `username`, never to the API. */
export interface DeployToken {
  id: number;
  name: string;
  username: string;
  /** A timestamp (ISO 8601), or null: the token never expires. */
  expires_at: Timestamp | null;
  revoked: boolean;
  expired: boolean;
  scopes: DeployTokenScope[];
}

/** The answer to creating a deploy token: with its value, once (deploy tokens cannot be rotated). */
export interface NewDeployToken extends DeployToken {
  token: string;
}

export interface CreateDeployTokenParams {
  name: string;
  scopes: DeployTokenScope[];
  /** Omitted: the token never expires. */
  expires_at?: Timestamp | Date;
  /** Default `gitlab+deploy-token-{n}`. */
  username?: string;
}

export interface ListDeployTokensParams {
  active?: boolean;
}
