import { PROTECTED_BRANCH_ACCESS_LEVELS, type ProtectedBranchAccessLevel } from '../../gitlab/types/protected-branches';
import type { BranchAccessRecord, ProtectedBranchRecord } from '../state';
import { Presenter } from './presenter';

/** The forge's `access_level_description` of each protected branch access level. */
const BRANCH_ACCESS_DESCRIPTIONS: Record<number, string> = {
  [PROTECTED_BRANCH_ACCESS_LEVELS.no_access]: 'No one',
  [PROTECTED_BRANCH_ACCESS_LEVELS.developer]: 'Developers + Maintainers',
  [PROTECTED_BRANCH_ACCESS_LEVELS.maintainer]: 'Maintainers',
  [PROTECTED_BRANCH_ACCESS_LEVELS.admin]: 'Admins',
} satisfies Record<ProtectedBranchAccessLevel, string>;

/** A protected branch as the forge's Protected branches API shows it, with who may push, merge and unprotect. */
export class ProtectedBranchPresenter extends Presenter {
  protectedBranch(branch: ProtectedBranchRecord): Record<string, unknown> {
    return {
      id: branch.id,
      name: branch.name,
      push_access_levels: branch.push_access_levels.map((a) => this.branchAccess(a)),
      merge_access_levels: branch.merge_access_levels.map((a) => this.branchAccess(a)),
      unprotect_access_levels: branch.unprotect_access_levels.map((a) => this.branchAccess(a)),
      allow_force_push: branch.allow_force_push,
      code_owner_approval_required: branch.code_owner_approval_required,
    };
  }

  /** A user entry is described by the user's name, a group entry by the group's name, as on the forge. */
  private branchAccess(access: BranchAccessRecord): Record<string, unknown> {
    const user = access.user_id !== null ? this.state.users.get(access.user_id) : undefined;
    const group = access.group_id !== null ? this.state.groups.get(access.group_id) : undefined;
    const description =
      user?.name ??
      group?.name ??
      (access.access_level !== null ? BRANCH_ACCESS_DESCRIPTIONS[access.access_level] : '');
    return {
      access_level: access.access_level,
      access_level_description: description,
      user_id: access.user_id,
      group_id: access.group_id,
    };
  }
}
