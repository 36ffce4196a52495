/**
 * Protected branch access levels (GitLab's "Protected branches API"): `0` no access, `30` developer, `40` maintainer,
 * `60` admin. The one table of them, as ACCESS_LEVELS is of members' roles.
 */
export const PROTECTED_BRANCH_ACCESS_LEVELS = { no_access: 0, developer: 30, maintainer: 40, admin: 60 } as const;
export type ProtectedBranchAccessLevelName = keyof typeof PROTECTED_BRANCH_ACCESS_LEVELS;
export type ProtectedBranchAccessLevel = (typeof PROTECTED_BRANCH_ACCESS_LEVELS)[ProtectedBranchAccessLevelName];

/** Every name of PROTECTED_BRANCH_ACCESS_LEVELS, in its order (lowest level first). */
export const PROTECTED_BRANCH_ACCESS_LEVEL_NAMES: readonly [
  ProtectedBranchAccessLevelName,
  ...ProtectedBranchAccessLevelName[],
] = Object.keys(PROTECTED_BRANCH_ACCESS_LEVELS) as [
  ProtectedBranchAccessLevelName,
  ...ProtectedBranchAccessLevelName[],
];
/** Every number of PROTECTED_BRANCH_ACCESS_LEVELS, lowest first. */
export const PROTECTED_BRANCH_ACCESS_LEVEL_VALUES: readonly [
  ProtectedBranchAccessLevel,
  ...ProtectedBranchAccessLevel[],
] = Object.values(PROTECTED_BRANCH_ACCESS_LEVELS) as [ProtectedBranchAccessLevel, ...ProtectedBranchAccessLevel[]];
/** Each of push, merge and unprotect defaults to maintainer. */
export const DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL = PROTECTED_BRANCH_ACCESS_LEVELS.maintainer;

const PROTECTED_BRANCH_ACCESS_LEVEL_NAME_OF = new Map<number, ProtectedBranchAccessLevelName>(
  PROTECTED_BRANCH_ACCESS_LEVEL_NAMES.map((name) => [PROTECTED_BRANCH_ACCESS_LEVELS[name], name]),
);

/** The name of a protected branch access level (`40` → `maintainer`); undefined for a number that is none. */
export function protectedBranchAccessLevelName(level: number): ProtectedBranchAccessLevelName | undefined {
  return PROTECTED_BRANCH_ACCESS_LEVEL_NAME_OF.get(level);
}

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
  { user_id: number } | { group_id: number } | { access_level: ProtectedBranchAccessLevel };

export interface ListProtectedBranchesParams {
  /** Name or part of a name. */
  search?: string;
}

/** Create parameters; each access level defaults to `40`. */
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

/** `PATCH`: the only option the forge documents; omitted means false. */
export interface EditProtectedBranchParams {
  code_owner_approval_required?: boolean;
}
