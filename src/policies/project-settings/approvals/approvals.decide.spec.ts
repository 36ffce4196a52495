import { SKIP, type Decision } from '../../../engine/policy';
import {
  anApprovalRule,
  aPolicy,
  aProjectSnapshot,
  aSnapshot,
  NOW,
} from '../../../../test/support/builders/project-settings';
import { decideProjectSettings, type ProjectSettingsProjectSnapshot } from '../project-settings.decide';
import {
  CREATE_APPROVAL_RULE,
  DELETE_APPROVAL_RULE,
  EDIT_APPROVAL_RULE,
  EDIT_APPROVAL_SETTINGS,
} from './approvals.decide';

const T = NOW.getTime();

function decide(policy: Record<string, unknown>, ...projects: ProjectSettingsProjectSnapshot[]): Decision[] {
  return decideProjectSettings(aPolicy(policy), aSnapshot(...projects), NOW);
}

/** Action and reason of each decision, for tables. */
function lines(decisions: readonly Decision[]): [string, string][] {
  return decisions.map((decision) => [decision.action, decision.reason]);
}

describe('project_settings decide: approvals', () => {
  const SETTINGS = {
    approvals_before_merge: 0,
    reset_approvals_on_push: false,
    disable_overriding_approvers_per_merge_request: false,
    merge_requests_author_approval: true,
    merge_requests_disable_committers_approval: false,
    require_password_to_approve: false,
  };
  const declared = {
    protected_branches: undefined,
    approvals: {
      settings: {
        reset_approvals_on_push: true,
        merge_requests_author_approval: false,
        require_password_to_approve: false,
      },
    },
  };

  it('edits only the settings that differ, in one change', () => {
    const decisions = decide(declared, aProjectSnapshot({ protectedBranches: undefined, approvalSettings: SETTINGS }));
    expect(decisions).toEqual([
      {
        action: EDIT_APPROVAL_SETTINGS,
        target: 'acme/api approval settings',
        key: `42:approvals:settings:edit_approval_settings:${T}`,
        reason:
          'acme/api: approval settings: reset_approvals_on_push false → true, merge_requests_author_approval true → false',
        params: {
          project: 42,
          source: 'acme/api',
          settings: { reset_approvals_on_push: true, merge_requests_author_approval: false },
        },
      },
    ]);
  });

  it('decides nothing when the declared settings match, whatever the others are', () => {
    const matching = {
      ...SETTINGS,
      reset_approvals_on_push: true,
      merge_requests_author_approval: false,
      approvals_before_merge: 3,
    };
    expect(decide(declared, aProjectSnapshot({ protectedBranches: undefined, approvalSettings: matching }))).toEqual(
      [],
    );
  });

  it('reports settings the forge lacks, one by one, and the whole section where it has no approvals', () => {
    const { require_password_to_approve: _lacking, ...older } = SETTINGS;
    expect(
      lines(
        decide(
          declared,
          aProjectSnapshot({
            protectedBranches: undefined,
            approvalSettings: { ...older, reset_approvals_on_push: true, merge_requests_author_approval: false },
          }),
        ),
      ),
    ).toEqual([[SKIP, 'skip: acme/api: approval settings: require_password_to_approve not available on this forge']]);
    expect(lines(decide(declared, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([
      [
        SKIP,
        'skip: acme/api: approval settings: not available on this forge, or not to this token (the forge answered 404 or 403)',
      ],
    ]);
  });

  const RULES = {
    protected_branches: undefined,
    approvals: { rules: [{ name: 'security', approvals_required: 1, group_ids: [42] }] },
  };

  it('creates a declared rule that is missing', () => {
    const decisions = decide(RULES, aProjectSnapshot({ protectedBranches: undefined, approvalRules: [] }));
    expect(decisions).toEqual([
      {
        action: CREATE_APPROVAL_RULE,
        target: 'acme/api approval rule security',
        key: `42:approval_rule:security:create_approval_rule:${T}`,
        reason: 'acme/api: approval rule security: missing → create',
        params: { project: 42, source: 'acme/api', rule: { name: 'security', approvals_required: 1, group_ids: [42] } },
      },
    ]);
  });

  it.each<[string, Parameters<typeof anApprovalRule>[0], string]>([
    [
      'approvals_required',
      { approvals_required: 0, groups: [{ id: 42 }] },
      'acme/api: approval rule security: approvals_required 0 → 1',
    ],
    ['the groups', { groups: [{ id: 7 }, { id: 42 }] }, 'acme/api: approval rule security: group_ids [7, 42] → [42]'],
    [
      'both',
      { approvals_required: 3, groups: [] },
      'acme/api: approval rule security: approvals_required 3 → 1, group_ids [] → [42]',
    ],
  ])('edits a rule whose %s differ, keeping its id', (_title, rule, reason) => {
    const decisions = decide(
      RULES,
      aProjectSnapshot({ protectedBranches: undefined, approvalRules: [anApprovalRule({ id: 12, ...rule })] }),
    );
    expect(lines(decisions)).toEqual([[EDIT_APPROVAL_RULE, reason]]);
    expect(decisions[0]).toMatchObject({
      key: `42:approval_rule:12:edit_approval_rule:${T}`,
      params: {
        project: 42,
        source: 'acme/api',
        rule_id: 12,
        rule: { name: 'security', approvals_required: 1, group_ids: [42] },
      },
    });
  });

  it('compares users only where declared, as sets', () => {
    const policy = {
      protected_branches: undefined,
      approvals: { rules: [{ name: 'security', approvals_required: 1, user_ids: [5, 3, 5] }] },
    };
    expect(
      decide(
        policy,
        aProjectSnapshot({
          protectedBranches: undefined,
          approvalRules: [anApprovalRule({ users: [{ id: 3 }, { id: 5 }], groups: [{ id: 99 }] })],
        }),
      ),
    ).toEqual([]);
    expect(
      lines(
        decide(
          policy,
          aProjectSnapshot({ protectedBranches: undefined, approvalRules: [anApprovalRule({ users: [{ id: 3 }] })] }),
        ),
      ),
    ).toEqual([[EDIT_APPROVAL_RULE, 'acme/api: approval rule security: user_ids [3] → [3, 5]']]);
  });

  it('says when hidden groups keep the groups from being compared', () => {
    const hidden = anApprovalRule({ groups: [{ id: 42 }], contains_hidden_groups: true });
    expect(lines(decide(RULES, aProjectSnapshot({ protectedBranches: undefined, approvalRules: [hidden] })))).toEqual([
      [
        SKIP,
        'skip: acme/api: approval rule security: group_ids not fully compared: the rule has groups this token cannot see',
      ],
    ]);
    const extra = anApprovalRule({ groups: [{ id: 42 }, { id: 8 }], contains_hidden_groups: true });
    expect(lines(decide(RULES, aProjectSnapshot({ protectedBranches: undefined, approvalRules: [extra] })))).toEqual([
      [EDIT_APPROVAL_RULE, 'acme/api: approval rule security: group_ids [8, 42] and hidden groups → [42]'],
    ]);
  });

  it('leaves undeclared rules alone without prune; with it deletes user-defined ones, never system rules', () => {
    const rules = [
      anApprovalRule({ id: 7, groups: [{ id: 42 }] }),
      anApprovalRule({ id: 8, name: 'legacy' }),
      anApprovalRule({ id: 9, name: 'Coverage-Check', rule_type: 'report_approver' }),
      anApprovalRule({ id: 10, name: 'Code owners', rule_type: 'code_owner' }),
      anApprovalRule({ id: 11, name: 'security', groups: [{ id: 42 }] }),
    ];
    const project = aProjectSnapshot({ protectedBranches: undefined, approvalRules: rules });
    expect(decide(RULES, project)).toEqual([]);
    const decisions = decide({ ...RULES, prune: true }, project);
    expect(lines(decisions)).toEqual([
      [DELETE_APPROVAL_RULE, 'acme/api: approval rule legacy (id 8): not declared → delete'],
      [
        DELETE_APPROVAL_RULE,
        'acme/api: approval rule security (id 11): a second rule of this name (rule 7 is held) → delete',
      ],
    ]);
    expect(decisions[0]).toMatchObject({
      key: `42:approval_rule:8:delete_approval_rule:${T}`,
      params: { project: 42, source: 'acme/api', rule_id: 8, name: 'legacy' },
    });
  });

  it('reports approval rules as not available where the forge has none', () => {
    expect(lines(decide(RULES, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([
      [
        SKIP,
        'skip: acme/api: approval rules: not available on this forge, or not to this token (the forge answered 404 or 403)',
      ],
    ]);
  });
});
