import {
  anIntegration,
  aPolicy,
  aProjectSnapshot,
  aProtectedBranch,
  anApprovalRule,
  aSnapshot,
  NOW,
} from '../../../test/support/builders/project-settings';
import {
  CREATE_APPROVAL_RULE,
  DELETE_APPROVAL_RULE,
  EDIT_APPROVAL_RULE,
  EDIT_APPROVAL_SETTINGS,
} from './approvals/approvals.decide';
import { createRuleTarget, deleteRuleTarget, editRuleTarget, settingsTarget } from './approvals/approvals.params';
import { DISABLE_INTEGRATION, SET_INTEGRATION } from './integrations/integrations.decide';
import { integrationTarget, setIntegrationTarget } from './integrations/integrations.params';
import { decideProjectSettings } from './project-settings.decide';
import {
  EDIT_PROTECTED_BRANCH,
  FORGET_INTERRUPTED,
  PROTECT_BRANCH,
  REPROTECT_BRANCH,
  UNPROTECT_BRANCH,
} from './protected-branches/protected-branches.decide';
import {
  branchTarget,
  codeOwnerTarget,
  forgetTarget,
  protectionTarget,
} from './protected-branches/protected-branches.params';

const WEBHOOK = 'https://chat.example.com/hooks/T0/B0/s3cr3t-webhook';

describe('project_settings params', () => {
  it('reads back what every action decided, as the client takes it', () => {
    const config = aPolicy({
      prune: true,
      protected_branches: [
        { name: 'main', push_access_level: 40, merge_access_level: 30, code_owner_approval_required: true },
        { name: 'release/*', push_access_level: 0, merge_access_level: 40 },
        { name: 'stable', push_access_level: 40, merge_access_level: 40 },
      ],
      approvals: {
        settings: { reset_approvals_on_push: true },
        rules: [
          { name: 'security', approvals_required: 2 },
          { name: 'qa', approvals_required: 1, user_ids: [5] },
        ],
      },
      integrations: { 'chat-notifications-a': { webhook: WEBHOOK } },
    });
    const project = aProjectSnapshot({
      protectedBranches: [
        aProtectedBranch(),
        aProtectedBranch({ name: 'stable', allow_force_push: true }),
        aProtectedBranch({ name: 'old' }),
      ],
      approvalSettings: { reset_approvals_on_push: false },
      approvalRules: [anApprovalRule({ id: 3 }), anApprovalRule({ id: 4, name: 'legacy' })],
      integrations: { 'chatops-a': anIntegration() },
      interrupted: {
        gone: {
          name: 'gone',
          push_access_level: 40,
          merge_access_level: 40,
          allow_force_push: false,
          allowed_to_push: [{ user_id: 3 }],
        },
      },
    });
    const decisions = decideProjectSettings(config, aSnapshot(project), NOW);
    const read = Object.fromEntries(
      decisions.map((decision) => {
        const readers: Record<string, (params: typeof decision.params) => unknown> = {
          [PROTECT_BRANCH]: protectionTarget,
          [REPROTECT_BRANCH]: protectionTarget,
          [EDIT_PROTECTED_BRANCH]: codeOwnerTarget,
          [UNPROTECT_BRANCH]: branchTarget,
          [EDIT_APPROVAL_SETTINGS]: settingsTarget,
          [CREATE_APPROVAL_RULE]: createRuleTarget,
          [EDIT_APPROVAL_RULE]: editRuleTarget,
          [DELETE_APPROVAL_RULE]: deleteRuleTarget,
          [SET_INTEGRATION]: setIntegrationTarget,
          [DISABLE_INTEGRATION]: integrationTarget,
          [FORGET_INTERRUPTED]: forgetTarget,
        };
        return [decision.target, readers[decision.action](decision.params)];
      }),
    );
    const where = { project: 42, source: 'acme/api' };
    expect(read).toEqual({
      'acme/api protected branch release/*': {
        ...where,
        protection: { name: 'release/*', push_access_level: 0, merge_access_level: 40, allow_force_push: false },
      },
      'acme/api protected branch main': { ...where, name: 'main', codeOwnerApprovalRequired: true },
      'acme/api protected branch stable': {
        ...where,
        protection: {
          name: 'stable',
          push_access_level: 40,
          merge_access_level: 40,
          unprotect_access_level: 40,
          allow_force_push: false,
          code_owner_approval_required: false,
        },
      },
      'acme/api protected branch old': { ...where, name: 'old' },
      'acme/api approval settings': { ...where, settings: { reset_approvals_on_push: true } },
      'acme/api approval rule security': { ...where, ruleId: 3, rule: { name: 'security', approvals_required: 2 } },
      'acme/api approval rule qa': { ...where, rule: { name: 'qa', approvals_required: 1, user_ids: [5] } },
      'acme/api approval rule legacy (id 4)': { ...where, ruleId: 4, name: 'legacy' },
      'acme/api integration chat-notifications-a': {
        ...where,
        slug: 'chat-notifications-a',
        values: {},
        secrets: ['webhook'],
      },
      'acme/api integration chatops-a': { ...where, slug: 'chatops-a' },
      'acme/api protected branch gone': {
        ...where,
        name: 'gone',
        kept: {
          name: 'gone',
          push_access_level: 40,
          merge_access_level: 40,
          allow_force_push: false,
          allowed_to_push: [{ user_id: 3 }],
        },
      },
    });
  });

  it('refuses mistyped params, naming the parameter', () => {
    expect(() =>
      protectionTarget({
        project: 42,
        source: 'acme/api',
        name: 'main',
        push_access_level: 50,
        merge_access_level: 40,
        allow_force_push: false,
      }),
    ).toThrow('project_settings: action parameter "push_access_level" must be one of 0, 30, 40, 60, got 50');
    expect(() =>
      setIntegrationTarget({ project: 42, source: 'acme/api', slug: 'nope', values: {}, secrets: [] }),
    ).toThrow(
      'project_settings: action parameter "slug" must be an integration slug (docs/api-client.md, Integration slugs), got "nope"',
    );
  });
});
