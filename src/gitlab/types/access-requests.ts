import type { AccessLevel, ProjectAccessLevel } from './access-levels';
import type { Timestamp, UserState } from './common';

export type AccessRequestSource = 'groups' | 'projects';

/** GitLab's "Group and project access requests API"; `id` is the requesting user's id. */
export interface AccessRequest {
  id: number;
  username: string;
  name: string;
  state: UserState;
  created_at: Timestamp;
  requested_at: Timestamp;
}

/** The approve response carries `access_level` instead of `requested_at`. */
export interface ApprovedAccessRequest<L extends AccessLevel = AccessLevel> extends Omit<
  AccessRequest,
  'requested_at'
> {
  access_level: L;
}

/** `50` owner is valid for groups only. */
export type AccessLevelFor<S extends AccessRequestSource> = S extends 'groups' ? AccessLevel : ProjectAccessLevel;

export interface ApproveAccessRequestParams<S extends AccessRequestSource> {
  /** Default 30, developer. */
  access_level?: AccessLevelFor<S>;
}
