import { SKIP, type Decision } from '../../engine/policy';
import {
  aGroupEntry,
  anApprovalRule,
  anIntegration,
  aPolicy,
  aProjectSnapshot,
  aProtectedBranch,
  aRole,
  aSnapshot,
  aUserEntry,
  NOW,
} from '../../../test/support/builders/project-settings';
import {
  CREATE_APPROVAL_RULE,
  decideProjectSettings,
  DELETE_APPROVAL_RULE,
  DISABLE_INTEGRATION,
  EDIT_APPROVAL_RULE,
  EDIT_APPROVAL_SETTINGS,
  EDIT_PROTECTED_BRANCH,
  FORGET_INTERRUPTED,
  PROTECT_BRANCH,
  REPROTECT_BRANCH,
  SET_INTEGRATION,
  UNPROTECT_BRANCH,
  type ProjectSettingsProjectSnapshot,
} from './project-settings.decide';
import { fingerprintName, parameterFingerprint } from './integrations/integrations.params';

const T = NOW.getTime();
const WEBHOOK = 'https://chat.example.com/hooks/T0/B0/s3cr3t-webhook';
const CHAT = { 'chat-notifications-a': { webhook: WEBHOOK, notify_only_broken_pipelines: true } };
/** The fingerprint set_integration keeps after setting `value` for policy `baseline`. */
const printOf = (slug: 'chat-notifications-a' | 'issue-tracker-b' | 'chatops-a', parameter: string, value: string | number | boolean) => ({
  [fingerprintName(slug, parameter)]: parameterFingerprint('baseline', slug, parameter, value),
});

function decide(policy: Record<string, unknown>, ...projects: ProjectSettingsProjectSnapshot[]): Decision[] {
  return decideProjectSettings(aPolicy(policy), aSnapshot(...projects), NOW);
}

/** Action and reason of each decision, for tables. */
function lines(decisions: readonly Decision[]): [string, string][] {
  return decisions.map((decision) => [decision.action, decision.reason]);
}

describe('project_settings decide: protected branches', () => {
  it('decides nothing when the branch is as declared', () => {
    expect(decide({}, aProjectSnapshot())).toEqual([]);
  });

  it.each<[string, Partial<Parameters<typeof aProtectedBranch>[0]>, string, string]>([
    ['push level', { push_access_levels: [aRole(30)] }, REPROTECT_BRANCH, 'acme/api: protected branch main: push_access_level developer → maintainer'],
    ['merge level', { merge_access_levels: [aRole(40)] }, REPROTECT_BRANCH, 'acme/api: protected branch main: merge_access_level maintainer → developer'],
    ['force push allowed', { allow_force_push: true }, REPROTECT_BRANCH, 'acme/api: protected branch main: allow_force_push true → false'],
    [
      'two roles where one is declared',
      { push_access_levels: [aRole(30), aRole(40)] },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: push_access_level developer + maintainer → maintainer',
    ],
    ['users only, no role', { push_access_levels: [aUserEntry(5)] }, REPROTECT_BRANCH, 'acme/api: protected branch main: push_access_level none → maintainer'],
    [
      'several at once',
      { push_access_levels: [aRole(0)], merge_access_levels: [aRole(60)], allow_force_push: true },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: push_access_level no_access → maintainer, merge_access_level admin → developer, allow_force_push true → false',
    ],
  ])('%s differs', (_title, branch, action, reason) => {
    const decisions = decide({}, aProjectSnapshot({ protectedBranches: [aProtectedBranch(branch)] }));
    expect(lines(decisions)).toEqual([[action, reason]]);
    expect(decisions[0]).toMatchObject({ target: 'acme/api protected branch main', key: `42:branch:main:reprotect_branch:${T}` });
  });

  it('protects a declared branch that is not protected, with the declared protection', () => {
    const decisions = decide(
      { protected_branches: [{ name: 'release/*', push_access_level: 'no_access', merge_access_level: 40, unprotect_access_level: 60, allow_force_push: true, code_owner_approval_required: true }] },
      aProjectSnapshot({ protectedBranches: [] }),
    );
    expect(decisions).toEqual([
      {
        action: PROTECT_BRANCH,
        target: 'acme/api protected branch release/*',
        key: `42:branch:release/*:protect_branch:${T}`,
        reason: 'acme/api: protected branch release/*: not protected → protect',
        params: {
          project: 42,
          source: 'acme/api',
          name: 'release/*',
          push_access_level: 0,
          merge_access_level: 40,
          unprotect_access_level: 60,
          allow_force_push: true,
          code_owner_approval_required: true,
        },
      },
    ]);
  });

  it('compares levels by number, whether the file names them or numbers them', () => {
    const byNumber = { protected_branches: [{ name: 'main', push_access_level: 40, merge_access_level: 30, unprotect_access_level: 40 }] };
    const byName = { protected_branches: [{ name: 'main', push_access_level: 'maintainer', merge_access_level: 'developer', unprotect_access_level: 'maintainer' }] };
    expect(decide(byNumber, aProjectSnapshot())).toEqual([]);
    expect(decide(byName, aProjectSnapshot())).toEqual([]);
    const drifted = aProjectSnapshot({ protectedBranches: [aProtectedBranch({ unprotect_access_levels: [aRole(60)] })] });
    expect(decide(byNumber, drifted)).toEqual(decide(byName, drifted));
    expect(lines(decide(byName, drifted))).toEqual([[REPROTECT_BRANCH, 'acme/api: protected branch main: unprotect_access_level admin → maintainer']]);
  });

  it('ignores user and group entries when comparing, and keeps them across a reprotect', () => {
    const withPeople = aProtectedBranch({
      push_access_levels: [aRole(40), aUserEntry(5)],
      merge_access_levels: [aRole(30), aGroupEntry(9)],
      unprotect_access_levels: [aRole(60)],
    });
    expect(decide({}, aProjectSnapshot({ protectedBranches: [withPeople] }))).toEqual([]);

    const drifted = { ...withPeople, allow_force_push: true, code_owner_approval_required: true };
    const [reprotect] = decide({}, aProjectSnapshot({ protectedBranches: [drifted] }));
    // Undeclared: unprotect level, code owner approval, users and groups: all as the forge had them.
    expect(reprotect.params).toEqual({
      project: 42,
      source: 'acme/api',
      name: 'main',
      push_access_level: 40,
      merge_access_level: 30,
      unprotect_access_level: 60,
      allow_force_push: false,
      code_owner_approval_required: true,
      allowed_to_push: [{ user_id: 5 }],
      allowed_to_merge: [{ group_id: 9 }],
    });
  });

  it('edits code owner approval in place when only it differs', () => {
    const policy = { protected_branches: [{ name: 'main', push_access_level: 40, merge_access_level: 30, code_owner_approval_required: true }] };
    const decisions = decide(policy, aProjectSnapshot());
    expect(lines(decisions)).toEqual([[EDIT_PROTECTED_BRANCH, 'acme/api: protected branch main: code_owner_approval_required false → true']]);
    expect(decisions[0].params).toEqual({ project: 42, source: 'acme/api', name: 'main', code_owner_approval_required: true });
  });

  it('folds a code owner change into a reprotect that happens anyway', () => {
    const policy = { protected_branches: [{ name: 'main', push_access_level: 40, merge_access_level: 30, code_owner_approval_required: true }] };
    const decisions = decide(policy, aProjectSnapshot({ protectedBranches: [aProtectedBranch({ allow_force_push: true })] }));
    expect(lines(decisions)).toEqual([[REPROTECT_BRANCH, 'acme/api: protected branch main: allow_force_push true → false, code_owner_approval_required false → true']]);
    expect(decisions[0].params).toMatchObject({ code_owner_approval_required: true });
  });

  it('reports code owner approval as not available where the forge lacks it, and sends it nowhere', () => {
    const policy = { protected_branches: [{ name: 'main', push_access_level: 40, merge_access_level: 30, code_owner_approval_required: true }] };
    const lowerTier = aProtectedBranch({ code_owner_approval_required: undefined });
    expect(decide(policy, aProjectSnapshot({ protectedBranches: [lowerTier] }))).toEqual([
      {
        action: SKIP,
        target: 'acme/api protected branch main',
        key: '42:branch:main:code_owner_approval_required',
        reason: 'skip: acme/api: protected branch main: code_owner_approval_required not available on this forge',
        params: { project: 42, source: 'acme/api' },
      },
    ]);
    const [reprotect, skip] = decide(policy, aProjectSnapshot({ protectedBranches: [{ ...lowerTier, allow_force_push: true }] }));
    expect([reprotect.action, skip.action]).toEqual([REPROTECT_BRANCH, SKIP]);
    expect(reprotect.params).not.toHaveProperty('code_owner_approval_required');
  });

  it('leaves undeclared protections alone without prune, and unprotects them with it', () => {
    const project = aProjectSnapshot({ protectedBranches: [aProtectedBranch(), aProtectedBranch({ name: 'legacy' })] });
    expect(decide({}, project)).toEqual([]);
    const decisions = decide({ prune: true }, project);
    expect(lines(decisions)).toEqual([[UNPROTECT_BRANCH, 'acme/api: protected branch legacy: protected, not declared → unprotect']]);
    expect(decisions[0].params).toEqual({ project: 42, source: 'acme/api', name: 'legacy' });
  });

  it('reports protected branches as not available when the forge has no answer for them', () => {
    expect(lines(decide({}, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([[SKIP, 'skip: acme/api: protected branches: not available on this forge']]);
  });
});

describe('project_settings decide: order and keys', () => {
  it('protects unprotected declared branches first of all, whatever the project', () => {
    const policy = {
      projects: ['acme/api', 'acme/web'],
      protected_branches: [
        { name: 'main', push_access_level: 40, merge_access_level: 30 },
        { name: 'release/*', push_access_level: 0, merge_access_level: 40 },
      ],
      approvals: { rules: [{ name: 'security', approvals_required: 2 }] },
    };
    const api = aProjectSnapshot({
      protectedBranches: [aProtectedBranch({ allow_force_push: true }), aProtectedBranch({ name: 'release/*', push_access_levels: [aRole(0)], merge_access_levels: [aRole(40)] })],
      approvalRules: [anApprovalRule()],
    });
    const web = aProjectSnapshot({ project: 'acme/web', projectId: 43, protectedBranches: [], approvalRules: [anApprovalRule({ id: 9 })] });
    expect(lines(decide(policy, web, api))).toEqual([
      [PROTECT_BRANCH, 'acme/web: protected branch main: not protected → protect'],
      [PROTECT_BRANCH, 'acme/web: protected branch release/*: not protected → protect'],
      [REPROTECT_BRANCH, 'acme/api: protected branch main: allow_force_push true → false'],
      [EDIT_APPROVAL_RULE, 'acme/api: approval rule security: approvals_required 1 → 2'],
      [EDIT_APPROVAL_RULE, 'acme/web: approval rule security: approvals_required 1 → 2'],
    ]);
  });

  it('puts the pass instant in every action key, so a drift that comes back is repaired again', () => {
    const project = aProjectSnapshot({ protectedBranches: [] });
    const now = decideProjectSettings(aPolicy(), aSnapshot(project), NOW);
    const nextMonth = decideProjectSettings(aPolicy(), aSnapshot(project), new Date(T + 30 * 86_400_000));
    expect(now[0].key).toBe(`42:branch:main:protect_branch:${T}`);
    expect(nextMonth[0].key).toBe(`42:branch:main:protect_branch:${T + 30 * 86_400_000}`);
    // The same observation at the same instant decides the same keys: plan and the executor agree.
    expect(decideProjectSettings(aPolicy(), aSnapshot(project), NOW)).toEqual(now);
  });

  it('keeps the key of the same decision parked after a refusal, so the engine does not send it again before its time', () => {
    const project = aProjectSnapshot({ protectedBranches: [aProtectedBranch({ push_access_levels: [aRole(30)] })] });
    const [refused] = decideProjectSettings(aPolicy(), aSnapshot(project), NOW);
    const parked = { key: refused.key, action: refused.action, params: refused.params };
    const later = new Date(T + 3_600_000);
    const [again] = decideProjectSettings(aPolicy(), aSnapshot({ ...project, parked: [parked] }), later);
    expect(again.key).toBe(refused.key);
    // Another decision about the same branch (a person added a user since: the reprotect keeps them) is a new one.
    const changed = aProjectSnapshot({ protectedBranches: [aProtectedBranch({ push_access_levels: [aRole(30), aUserEntry(5)] })], parked: [parked] });
    expect(decideProjectSettings(aPolicy(), aSnapshot(changed), later)[0].key).toBe(`42:branch:main:reprotect_branch:${later.getTime()}`);
    // A parked decision of another project or branch lends its key to nothing here.
    const elsewhere = { ...parked, key: `43:branch:main:reprotect_branch:${T}` };
    expect(decideProjectSettings(aPolicy(), aSnapshot({ ...project, parked: [elsewhere] }), later)[0].key).toBe(`42:branch:main:reprotect_branch:${later.getTime()}`);
  });
});

describe('project_settings decide: interrupted reprotects', () => {
  const kept = {
    name: 'main',
    push_access_level: 40 as const,
    merge_access_level: 30 as const,
    unprotect_access_level: 60 as const,
    allow_force_push: false,
    allowed_to_push: [{ user_id: 3 }, { group_id: 7 }],
  };

  it('restores what an interrupted reprotect kept while the declared branch is unprotected', () => {
    const decisions = decide({}, aProjectSnapshot({ protectedBranches: [], interrupted: { main: kept } }));
    expect(lines(decisions)).toEqual([[PROTECT_BRANCH, 'acme/api: protected branch main: not protected (a reprotect was interrupted) → protect as before, with the declared levels']]);
    expect(decisions[0].params).toMatchObject({ unprotect_access_level: 60, allowed_to_push: [{ user_id: 3 }, { group_id: 7 }] });
  });

  it('forgets the record once the forge shows the branch protected, by anyone and however, and gives nothing back', () => {
    const byAPerson = aProtectedBranch({ push_access_levels: [aRole(30)] });
    const decisions = decide({}, aProjectSnapshot({ protectedBranches: [byAPerson], interrupted: { main: kept } }));
    expect(lines(decisions)).toEqual([
      [
        FORGET_INTERRUPTED,
        "acme/api: protected branch main: protected on the forge now (push developer, merge developer) → forget the interrupted reprotect's record; user 3, group 7 not given back",
      ],
      // The protection a person chose is compared as any other: the users of the record are not part of it.
      [REPROTECT_BRANCH, 'acme/api: protected branch main: push_access_level developer → maintainer'],
    ]);
    expect(decisions[0]).toMatchObject({ key: `42:interrupted:main:${FORGET_INTERRUPTED}:${T}`, params: { project: 42, source: 'acme/api', name: 'main', kept } });
    expect(decisions[1].params).not.toHaveProperty('allowed_to_push');
  });

  it('forgets the record of a branch the file no longer declares, and keeps records when the section could not be read', () => {
    const other = { ...kept, name: 'stable' };
    expect(lines(decide({}, aProjectSnapshot({ interrupted: { stable: other } })))).toEqual([
      [FORGET_INTERRUPTED, "acme/api: protected branch stable: no longer declared → forget the interrupted reprotect's record; user 3, group 7 not given back"],
    ]);
    expect(lines(decide({}, aProjectSnapshot({ protectedBranches: undefined, interrupted: { main: kept } })))).toEqual([
      [SKIP, 'skip: acme/api: protected branches: not available on this forge'],
    ]);
  });
});

describe('project_settings decide: approvals', () => {
  const SETTINGS = {
    approvals_before_merge: 0,
    reset_approvals_on_push: false,
    disable_overriding_approvers_per_merge_request: false,
    merge_requests_author_approval: true,
    merge_requests_disable_committers_approval: false,
    require_password_to_approve: false,
  };
  const declared = { protected_branches: undefined, approvals: { settings: { reset_approvals_on_push: true, merge_requests_author_approval: false, require_password_to_approve: false } } };

  it('edits only the settings that differ, in one change', () => {
    const decisions = decide(declared, aProjectSnapshot({ protectedBranches: undefined, approvalSettings: SETTINGS }));
    expect(decisions).toEqual([
      {
        action: EDIT_APPROVAL_SETTINGS,
        target: 'acme/api approval settings',
        key: `42:approvals:settings:edit_approval_settings:${T}`,
        reason: 'acme/api: approval settings: reset_approvals_on_push false → true, merge_requests_author_approval true → false',
        params: { project: 42, source: 'acme/api', settings: { reset_approvals_on_push: true, merge_requests_author_approval: false } },
      },
    ]);
  });

  it('decides nothing when the declared settings match, whatever the others are', () => {
    const matching = { ...SETTINGS, reset_approvals_on_push: true, merge_requests_author_approval: false, approvals_before_merge: 3 };
    expect(decide(declared, aProjectSnapshot({ protectedBranches: undefined, approvalSettings: matching }))).toEqual([]);
  });

  it('reports settings the forge lacks, one by one, and the whole section where it has no approvals', () => {
    const { require_password_to_approve: _lacking, ...older } = SETTINGS;
    expect(lines(decide(declared, aProjectSnapshot({ protectedBranches: undefined, approvalSettings: { ...older, reset_approvals_on_push: true, merge_requests_author_approval: false } })))).toEqual([
      [SKIP, 'skip: acme/api: approval settings: require_password_to_approve not available on this forge'],
    ]);
    expect(lines(decide(declared, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([[SKIP, 'skip: acme/api: approval settings: not available on this forge, or not to this token (the forge answered 404 or 403)']]);
  });

  const RULES = { protected_branches: undefined, approvals: { rules: [{ name: 'security', approvals_required: 1, group_ids: [42] }] } };

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
    ['approvals_required', { approvals_required: 0, groups: [{ id: 42 }] }, 'acme/api: approval rule security: approvals_required 0 → 1'],
    ['the groups', { groups: [{ id: 7 }, { id: 42 }] }, 'acme/api: approval rule security: group_ids [7, 42] → [42]'],
    ['both', { approvals_required: 3, groups: [] }, 'acme/api: approval rule security: approvals_required 3 → 1, group_ids [] → [42]'],
  ])('edits a rule whose %s differ, keeping its id', (_title, rule, reason) => {
    const decisions = decide(RULES, aProjectSnapshot({ protectedBranches: undefined, approvalRules: [anApprovalRule({ id: 12, ...rule })] }));
    expect(lines(decisions)).toEqual([[EDIT_APPROVAL_RULE, reason]]);
    expect(decisions[0]).toMatchObject({
      key: `42:approval_rule:12:edit_approval_rule:${T}`,
      params: { project: 42, source: 'acme/api', rule_id: 12, rule: { name: 'security', approvals_required: 1, group_ids: [42] } },
    });
  });

  it('compares users only where declared, as sets', () => {
    const policy = { protected_branches: undefined, approvals: { rules: [{ name: 'security', approvals_required: 1, user_ids: [5, 3, 5] }] } };
    expect(decide(policy, aProjectSnapshot({ protectedBranches: undefined, approvalRules: [anApprovalRule({ users: [{ id: 3 }, { id: 5 }], groups: [{ id: 99 }] })] }))).toEqual([]);
    expect(lines(decide(policy, aProjectSnapshot({ protectedBranches: undefined, approvalRules: [anApprovalRule({ users: [{ id: 3 }] })] })))).toEqual([
      [EDIT_APPROVAL_RULE, 'acme/api: approval rule security: user_ids [3] → [3, 5]'],
    ]);
  });

  it('says when hidden groups keep the groups from being compared', () => {
    const hidden = anApprovalRule({ groups: [{ id: 42 }], contains_hidden_groups: true });
    expect(lines(decide(RULES, aProjectSnapshot({ protectedBranches: undefined, approvalRules: [hidden] })))).toEqual([
      [SKIP, 'skip: acme/api: approval rule security: group_ids not fully compared: the rule has groups this token cannot see'],
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
      [DELETE_APPROVAL_RULE, 'acme/api: approval rule security (id 11): a second rule of this name (rule 7 is held) → delete'],
    ]);
    expect(decisions[0]).toMatchObject({ key: `42:approval_rule:8:delete_approval_rule:${T}`, params: { project: 42, source: 'acme/api', rule_id: 8, name: 'legacy' } });
  });

  it('reports approval rules as not available where the forge has none', () => {
    expect(lines(decide(RULES, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([[SKIP, 'skip: acme/api: approval rules: not available on this forge, or not to this token (the forge answered 404 or 403)']]);
  });
});

describe('project_settings decide: integrations', () => {
  const policy = { protected_branches: undefined, integrations: CHAT };
  const held = (properties: Record<string, unknown> = { notify_only_broken_pipelines: true }, fingerprints = printOf('chat-notifications-a', 'webhook', WEBHOOK)) =>
    aProjectSnapshot({ protectedBranches: undefined, integrations: { 'chat-notifications-a': anIntegration(properties) }, fingerprints });

  it('decides nothing when the values match and the secret is the one last set', () => {
    expect(decide(policy, held())).toEqual([]);
    // The forge may write booleans as text; the masked secret in the answer is never looked at.
    expect(decide(policy, held({ notify_only_broken_pipelines: '1', webhook: '************' }))).toEqual([]);
  });

  it('sets an integration that is not set, naming its secrets instead of carrying them', () => {
    const decisions = decide(policy, aProjectSnapshot({ protectedBranches: undefined, integrations: {} }));
    expect(decisions).toEqual([
      {
        action: SET_INTEGRATION,
        target: 'acme/api integration chat-notifications-a',
        key: `42:integration:chat-notifications-a:set_integration:${T}`,
        reason: 'acme/api: integration chat-notifications-a: not set → set',
        params: { project: 42, source: 'acme/api', slug: 'chat-notifications-a', values: { notify_only_broken_pipelines: true }, secrets: ['webhook'] },
      },
    ]);
  });

  it.each<[string, ProjectSettingsProjectSnapshot, string]>([
    ['a value differs', held({ notify_only_broken_pipelines: false }), 'acme/api: integration chat-notifications-a: notify_only_broken_pipelines: false → true'],
    ['the value is unset', held({ notify_only_broken_pipelines: null }), 'acme/api: integration chat-notifications-a: notify_only_broken_pipelines: (unset) → true'],
    ['the secret changed since it was set', held(undefined, printOf('chat-notifications-a', 'webhook', 'https://chat.example.com/hooks/old')), 'acme/api: integration chat-notifications-a: webhook: (secret) changed'],
    ['no fingerprint is known (Redis lost its data)', held(undefined, {}), 'acme/api: integration chat-notifications-a: webhook: (secret) not recorded → set'],
    [
      'the service is inactive',
      aProjectSnapshot({ protectedBranches: undefined, integrations: { 'chat-notifications-a': anIntegration({ notify_only_broken_pipelines: true }, false) }, fingerprints: printOf('chat-notifications-a', 'webhook', WEBHOOK) }),
      'acme/api: integration chat-notifications-a: inactive → active',
    ],
  ])('sets it when %s', (_title, project, reason) => {
    const decisions = decide(policy, project);
    expect(lines(decisions)).toEqual([[SET_INTEGRATION, reason]]);
    expect(decisions[0].params).toEqual({ project: 42, source: 'acme/api', slug: 'chat-notifications-a', values: { notify_only_broken_pipelines: true }, secrets: ['webhook'] });
  });

  it('compares a value the forge does not show by what was last set', () => {
    const withChannel = { protected_branches: undefined, integrations: { 'chat-notifications-a': { ...CHAT['chat-notifications-a'], channel: '#ops' } } };
    const fingerprints = { ...printOf('chat-notifications-a', 'webhook', WEBHOOK), ...printOf('chat-notifications-a', 'channel', '#ops') };
    expect(decide(withChannel, held(undefined, fingerprints))).toEqual([]);
    expect(lines(decide(withChannel, held(undefined, printOf('chat-notifications-a', 'webhook', WEBHOOK))))).toEqual([
      [SET_INTEGRATION, 'acme/api: integration chat-notifications-a: channel: (not shown by the forge) → "#ops"'],
    ]);
  });

  it('sends active for the one service that takes it, true unless declared', () => {
    const tracker = { url: 'https://tracker.acme.com/projects/API', username: 'forgewarden', password: 's3cr3t-password' };
    const decisions = decide({ protected_branches: undefined, integrations: { 'issue-tracker-b': tracker } }, aProjectSnapshot({ protectedBranches: undefined, integrations: {} }));
    expect(decisions[0].params).toEqual({
      project: 42,
      source: 'acme/api',
      slug: 'issue-tracker-b',
      values: { active: true, url: 'https://tracker.acme.com/projects/API', username: 'forgewarden' },
      secrets: ['password'],
    });
    const inactive = { protected_branches: undefined, integrations: { 'issue-tracker-b': { ...tracker, active: false } } };
    const observed = anIntegration({ url: tracker.url, username: tracker.username }, false);
    expect(decide(inactive, aProjectSnapshot({ protectedBranches: undefined, integrations: { 'issue-tracker-b': observed }, fingerprints: printOf('issue-tracker-b', 'password', tracker.password) }))).toEqual([]);
  });

  it('leaves undeclared integrations alone without prune; with it disables the active ones', () => {
    const project = aProjectSnapshot({
      protectedBranches: undefined,
      integrations: { 'chat-notifications-a': anIntegration({ notify_only_broken_pipelines: true }), 'chatops-a': anIntegration(), 'external-wiki': anIntegration({}, false) },
      fingerprints: printOf('chat-notifications-a', 'webhook', WEBHOOK),
    });
    expect(decide(policy, project)).toEqual([]);
    const decisions = decide({ ...policy, prune: true }, project);
    expect(lines(decisions)).toEqual([[DISABLE_INTEGRATION, 'acme/api: integration chatops-a: active, not declared → disable']]);
    expect(decisions[0].params).toEqual({ project: 42, source: 'acme/api', slug: 'chatops-a' });
  });

  it('reports integrations as not available where the forge gave no answer', () => {
    expect(lines(decide(policy, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([[SKIP, 'skip: acme/api: integrations: not available on this forge, or not to this token (the forge answered 404 or 403)']]);
  });
});

describe('project_settings decide: secrets', () => {
  it('never puts a secret in a target, a reason, a key or the params', () => {
    const secrets = { webhook: WEBHOOK, token: 's3cr3t-chatops-token', password: 's3cr3t-password' };
    const policy = {
      protected_branches: undefined,
      prune: true,
      integrations: {
        'chat-notifications-a': { webhook: secrets.webhook, channel: '#ops' },
        'chatops-a': { token: secrets.token },
        'issue-tracker-b': { url: 'https://tracker.acme.com/p', username: 'fw', password: secrets.password },
      },
    };
    const projects = [
      aProjectSnapshot({ protectedBranches: undefined, integrations: {} }),
      aProjectSnapshot({
        project: 'acme/web',
        projectId: 43,
        protectedBranches: undefined,
        // The forge echoing a secret must not make decide echo it.
        integrations: { 'chat-notifications-a': anIntegration({ webhook: secrets.webhook, channel: '#dev' }), 'chatops-a': anIntegration({ token: secrets.token }) },
        fingerprints: printOf('chatops-a', 'token', 'an-older-token'),
      }),
    ];
    const decisions = decide({ ...policy, projects: ['acme/api', 'acme/web'] }, ...projects);
    expect(lines(decisions)).toEqual([
      // In the spec's order of slugs.
      [SET_INTEGRATION, 'acme/api: integration chatops-a: not set → set'],
      [SET_INTEGRATION, 'acme/api: integration issue-tracker-b: not set → set'],
      [SET_INTEGRATION, 'acme/api: integration chat-notifications-a: not set → set'],
      [SET_INTEGRATION, 'acme/web: integration chatops-a: token: (secret) changed'],
      [SET_INTEGRATION, 'acme/web: integration issue-tracker-b: not set → set'],
      [SET_INTEGRATION, 'acme/web: integration chat-notifications-a: webhook: (secret) not recorded → set, channel: "#dev" → "#ops"'],
    ]);
    const printed = JSON.stringify(decisions);
    for (const value of Object.values(secrets)) expect(printed).not.toContain(value);
    expect(printed).not.toContain('s3cr3t');
  });
});
