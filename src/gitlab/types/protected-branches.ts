/** Spec 02 §2 "Protected branch": `0` no access, `30` developer, `40` maintainer, `60` admin. */
export const PROTECTED_BRANCH_ACCESS_LEVELS = { no_access: 0, developer: 30, maintainer: 40, admin: 60 } as const;
export type ProtectedBranchAccessLevel =
  (typeof PROTECTED_BRANCH_ACCESS_LEVELS)[keyof typeof PROTECTED_BRANCH_ACCESS_LEVELS];

/** One entry of `push_access_levels` etc.; a user or group entry has `access_level: null` (higher tiers). */
export interface ProtectedBranchAccess {
  access_level: ProtectedBranchAccessLevel | null;
  access_level_description: string;
  /** Higher tiers only. */
  user_id?: number | null;
  /** Higher tiers only. */
  group_id?: number | null;
}

export interface ProtectedBranch {
  id: number;
  /** A branch name or a wildcard such as `release/*`. */
  name: string;
  push_access_levels: ProtectedBranchAccess[];
  merge_access_levels: ProtectedBranchAccess[];
  unprotect_access_levels: ProtectedBranchAccess[];
  allow_force_push: boolean;
  code_owner_approval_required: boolean;
}

/** An element of `allowed_to_push` / `allowed_to_merge` / `allowed_to_unprotect` (higher tiers). */
export type ProtectedBranchAllowedTo =
  | { user_id: number }
  | { group_id: number }
  | { access_level: ProtectedBranchAccessLevel };

export interface ListProtectedBranchesParams {
  /** Name or part of a name. */
  search?: string;
}

/** Spec 02 §4 "Protected branches", create parameters; each access level defaults to `40`. */
export interface ProtectBranchParams {
  name: string;
  push_access_level?: ProtectedBranchAccessLevel;
  merge_access_level?: ProtectedBranchAccessLevel;
  unprotect_access_level?: ProtectedBranchAccessLevel;
  /** Default false. */
  allow_force_push?: boolean;
  allowed_to_push?: ProtectedBranchAllowedTo[];
  allowed_to_merge?: ProtectedBranchAllowedTo[];
  allowed_to_unprotect?: ProtectedBranchAllowedTo[];
  /** Default false (higher tier). */
  code_owner_approval_required?: boolean;
}

/** `PATCH`: spec 02 names only this option; omitted means false. */
export interface EditProtectedBranchParams {
  code_owner_approval_required?: boolean;
}
