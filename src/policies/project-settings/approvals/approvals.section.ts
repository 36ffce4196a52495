import type { SettingsSection } from '../project-settings.section';
import { approvalActions } from './approvals.actions';
import { type ApprovalsPart, decideApprovals } from './approvals.decide';
import { observeApprovals } from './approvals.observer';

/** `approvals:`, as the core composes it. */
export const approvals: SettingsSection<ApprovalsPart> = {
  observe: observeApprovals,
  decide: decideApprovals,
  actions: approvalActions,
};
