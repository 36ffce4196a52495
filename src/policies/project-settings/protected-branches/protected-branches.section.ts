import type { SettingsSection } from '../project-settings.section';
import { protectedBranchActions } from './protected-branches.actions';
import { decideProtectedBranches, type ProtectedBranchesPart } from './protected-branches.decide';
import { observeProtectedBranches } from './protected-branches.observer';

/** `protected_branches:`, as the core composes it. */
export const protectedBranches: SettingsSection<ProtectedBranchesPart> = {
  observe: observeProtectedBranches,
  decide: decideProtectedBranches,
  actions: protectedBranchActions,
};
