import { type World } from '../../src/sandbox';
import {
  acmeGroup,
  apiProject,
  baseWorld,
  MAINTAINER_TOKEN,
  OUTSIDER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';
import { defaultHeadSha } from '../../src/sandbox/approvals-state';
import {
  ConflictError,
  ForbiddenError,
  GitlabClient,
  NotFoundError,
  type ProjectApprovalSettings,
  UnauthorizedError,
  ValidationError,
} from '../../src/gitlab';
import { collect, useSandboxClients } from '../support/sandbox-clients';

/** Merge request approvals (higher tiers) through the client against the sandbox over real HTTP. */

const MIA = 2;
const ALICE = 3;
const REVIEWERS = 20;
const MAIN = 300;

function world(): World {
  return baseWorld({
    groups: [
      acmeGroup(),
      { id: REVIEWERS, path: 'reviewers', name: 'Reviewers', members: [{ user: 'mia', access_level: 'developer' }] },
    ],
    projects: [
      apiProject({
        protected_branches: [{ id: MAIN, name: 'main' }],
        merge_requests: [{ id: 500, iid: 7, title: 'Add retries' }],
      }),
      webProject(),
    ],
  });
}

describe('GitlabClient merge request approvals against the sandbox', () => {
  const forge = useSandboxClients(world);
  const client = (token?: string): GitlabClient => forge.client(token);

  it('shows and changes the project approval settings; maintainers only change them', async () => {
    const alice = client(USER_TOKEN);
    expect(await alice.projectApprovalSettings.show('acme/api')).toEqual<ProjectApprovalSettings>({
      approvals_before_merge: 0,
      reset_approvals_on_push: true,
      disable_overriding_approvers_per_merge_request: false,
      merge_requests_author_approval: false,
      merge_requests_disable_committers_approval: false,
      require_password_to_approve: false,
    });
    const changed = await client(MAINTAINER_TOKEN).projectApprovalSettings.edit('acme/api', {
      approvals_before_merge: 2,
      merge_requests_author_approval: true,
    });
    expect(changed).toMatchObject({
      approvals_before_merge: 2,
      merge_requests_author_approval: true,
      reset_approvals_on_push: true,
    });
    expect((await alice.projectApprovalSettings.show(1)).approvals_before_merge).toBe(2);

    await expect(alice.projectApprovalSettings.edit(1, { require_password_to_approve: true })).rejects.toThrow(
      ForbiddenError,
    );
    await expect(client(OUTSIDER_TOKEN).projectApprovalSettings.show(1)).rejects.toThrow(NotFoundError);
    await expect(client().projectApprovalSettings.edit(1, { approvals_before_merge: -1 })).rejects.toThrow(
      ValidationError,
    );
  });

  it('creates, lists, shows, edits and deletes project approval rules', async () => {
    const mia = client(MAINTAINER_TOKEN);
    const rule = await mia.projectApprovalRules.create('acme/api', {
      name: 'security',
      approvals_required: 1,
      user_ids: [ALICE],
      group_ids: [REVIEWERS],
      protected_branch_ids: [MAIN],
    });
    expect(rule).toMatchObject({
      name: 'security',
      rule_type: 'regular',
      approvals_required: 1,
      contains_hidden_groups: false,
      users: [{ id: ALICE, username: 'alice' }],
      groups: [{ id: REVIEWERS, path: 'reviewers', full_path: 'reviewers', full_name: 'Reviewers', ldap_cn: null }],
      protected_branches: [{ id: MAIN, name: 'main' }],
    });
    expect(rule.eligible_approvers.map((u) => u.id).sort()).toEqual([MIA, ALICE]);

    expect((await collect(client(USER_TOKEN).projectApprovalRules.all(1))).map((r) => r.id)).toEqual([rule.id]);
    expect(await mia.projectApprovalRules.show(1, rule.id)).toEqual(rule);

    // Users and groups absent from the given lists are removed.
    const edited = await mia.projectApprovalRules.edit(1, rule.id, {
      name: 'sec',
      approvals_required: 2,
      user_ids: [MIA],
      group_ids: [],
    });
    expect(edited).toMatchObject({
      name: 'sec',
      approvals_required: 2,
      users: [{ id: MIA }],
      groups: [],
      protected_branches: [{ id: MAIN }],
    });

    await expect(mia.projectApprovalRules.create(1, { name: 'sec', approvals_required: 1 })).rejects.toThrow(
      ValidationError,
    );
    await expect(
      client(USER_TOKEN).projectApprovalRules.create(1, { name: 'x', approvals_required: 1 }),
    ).rejects.toThrow(ForbiddenError);
    await mia.projectApprovalRules.remove(1, rule.id);
    await expect(mia.projectApprovalRules.show(1, rule.id)).rejects.toThrow(NotFoundError);
    await expect(mia.projectApprovalRules.remove(1, rule.id)).rejects.toThrow(NotFoundError);
  });

  it('keeps external approval rules behind the feature flag, then manages them', async () => {
    const mia = client(MAINTAINER_TOKEN);
    await expect(collect(mia.externalApprovalRules.all(1))).rejects.toThrow(NotFoundError);
    forge.sandbox.state.approvals.externalRulesProjects.add(1);

    const rule = await mia.externalApprovalRules.create('acme/api', {
      name: 'compliance',
      external_url: 'https://compliance.acme.test/check',
      protected_branch_ids: [MAIN],
    });
    expect(rule).toEqual({
      id: rule.id,
      name: 'compliance',
      project_id: 1,
      external_url: 'https://compliance.acme.test/check',
      protected_branches: [
        {
          id: MAIN,
          project_id: 1,
          name: 'main',
          created_at: expect.stringMatching(/^2025-06-02T12:/) as unknown,
          updated_at: expect.stringMatching(/^2025-06-02T12:/) as unknown,
          code_owner_approval_required: false,
        },
      ],
    });
    const edited = await mia.externalApprovalRules.edit(1, rule.id, { name: 'gate', protected_branch_ids: [] });
    expect(edited).toMatchObject({
      name: 'gate',
      external_url: 'https://compliance.acme.test/check',
      protected_branches: [],
    });
    expect(await collect(client(USER_TOKEN).externalApprovalRules.all(1))).toEqual([edited]);

    await expect(mia.externalApprovalRules.create(1, { name: 'bad', external_url: 'not a url' })).rejects.toThrow(
      ValidationError,
    );
    await expect(mia.externalApprovalRules.create(1, { name: 'gate', external_url: 'https://x.test' })).rejects.toThrow(
      ValidationError,
    );
    await expect(collect(mia.externalApprovalRules.all(2))).rejects.toThrow(NotFoundError);
    await mia.externalApprovalRules.remove(1, rule.id);
    await expect(mia.externalApprovalRules.remove(1, rule.id)).rejects.toThrow(NotFoundError);
    expect(await collect(mia.externalApprovalRules.all(1))).toEqual([]);
  });

  it('approves with the HEAD sha, refuses another sha with 409, and unapproves', async () => {
    const alice = client(USER_TOKEN);
    const status = await alice.mergeRequestApprovals.show('acme/api', 7);
    expect(status).toEqual({
      id: 500,
      iid: 7,
      project_id: 1,
      title: 'Add retries',
      description: '',
      state: 'opened',
      created_at: expect.any(String) as unknown,
      updated_at: expect.any(String) as unknown,
      merge_status: 'can_be_merged',
      approvals_required: 0,
      approvals_left: 0,
      approved_by: [],
    });
    expect((await alice.mergeRequestApprovals.edit(1, 7, { approvals_required: 2 })).approvals_left).toBe(2);

    await expect(alice.mergeRequestApprovals.approve(1, 7, { sha: '0'.repeat(40) })).rejects.toThrow(ConflictError);
    expect((await alice.mergeRequestApprovals.show(1, 7)).approved_by).toEqual([]);

    const approved = await alice.mergeRequestApprovals.approve(1, 7, { sha: defaultHeadSha(1, 7) });
    expect(approved).toMatchObject({
      approvals_required: 2,
      approvals_left: 1,
      approved_by: [{ user: { id: ALICE } }],
    });
    await expect(alice.mergeRequestApprovals.approve(1, 7)).rejects.toThrow(UnauthorizedError);
    expect((await client(MAINTAINER_TOKEN).mergeRequestApprovals.approve(1, 7)).approvals_left).toBe(0);

    await alice.mergeRequestApprovals.unapprove(1, 7);
    expect((await alice.mergeRequestApprovals.show(1, 7)).approved_by).toEqual([
      { user: expect.objectContaining({ id: MIA }) as unknown },
    ]);
    await expect(alice.mergeRequestApprovals.unapprove(1, 7)).rejects.toThrow(NotFoundError);

    await expect(alice.mergeRequestApprovals.show(1, 99)).rejects.toThrow(NotFoundError);
    await expect(client(OUTSIDER_TOKEN).mergeRequestApprovals.approve(1, 7)).rejects.toThrow(NotFoundError);
  });

  it('requires the password when the project asks for it', async () => {
    await client(MAINTAINER_TOKEN).projectApprovalSettings.edit(1, { require_password_to_approve: true });
    const alice = client(USER_TOKEN);
    await expect(alice.mergeRequestApprovals.approve(1, 7)).rejects.toThrow(UnauthorizedError);
    expect((await alice.mergeRequestApprovals.approve(1, 7, { approval_password: 'secret' })).approved_by).toHaveLength(
      1,
    );
  });

  it('manages merge request rules, refuses to change system rules, and reports the approval state', async () => {
    const mia = client(MAINTAINER_TOKEN);
    const alice = client(USER_TOKEN);
    const projectRule = await mia.projectApprovalRules.create(1, {
      name: 'security',
      approvals_required: 2,
      user_ids: [ALICE],
    });

    // Without rules of its own the merge request follows the project's rules.
    const inherited = await alice.mergeRequestApprovals.state(1, 7);
    expect(inherited.approval_rules_overwritten).toBe(false);
    expect(inherited.rules).toMatchObject([
      { name: 'security', approvals_required: 2, approved: false, approved_by: [] },
    ]);

    const copied = await alice.mergeRequestApprovalRules.create(1, 7, {
      name: 'ignored',
      approvals_required: 1,
      approval_project_rule_id: projectRule.id,
    });
    expect(copied).toMatchObject({
      name: 'security',
      rule_type: 'regular',
      approvals_required: 1,
      users: [{ id: ALICE }],
      source_rule: { approvals_required: 2 },
      overridden: true,
    });
    const own = await alice.mergeRequestApprovalRules.create(1, 7, {
      name: 'team',
      approvals_required: 1,
      group_ids: [REVIEWERS],
    });
    expect(own).toMatchObject({ source_rule: null, overridden: false, eligible_approvers: [{ id: MIA }] });
    const edited = await alice.mergeRequestApprovalRules.edit(1, 7, own.id, {
      name: 'team',
      approvals_required: 1,
      user_ids: [ALICE],
    });
    expect(edited).toMatchObject({ users: [{ id: ALICE }], groups: [{ id: REVIEWERS }] });
    expect((await alice.mergeRequestApprovalRules.all(1, 7)).map((r) => r.id)).toEqual([copied.id, own.id]);

    await alice.mergeRequestApprovals.approve(1, 7);
    const state = await alice.mergeRequestApprovals.state(1, 7);
    expect(state.approval_rules_overwritten).toBe(true);
    expect(state.rules.map((r) => [r.name, r.approved, r.approved_by.map((u) => u.id)])).toEqual([
      ['security', true, [ALICE]],
      ['team', true, [ALICE]],
    ]);

    const codeOwners = forge.sandbox.state.approvals.addMergeRequestRule(1, 7, {
      name: 'Code owners',
      rule_type: 'code_owner',
      approvals_required: 1,
      user_ids: [MIA],
      group_ids: [],
    });
    await expect(
      alice.mergeRequestApprovalRules.edit(1, 7, codeOwners.id, { name: 'x', approvals_required: 0 }),
    ).rejects.toThrow(ForbiddenError);
    await expect(alice.mergeRequestApprovalRules.remove(1, 7, codeOwners.id)).rejects.toThrow(ForbiddenError);

    await alice.mergeRequestApprovalRules.remove(1, 7, own.id);
    await expect(alice.mergeRequestApprovalRules.remove(1, 7, own.id)).rejects.toThrow(NotFoundError);
    expect((await alice.mergeRequestApprovalRules.all(1, 7)).map((r) => r.rule_type)).toEqual([
      'regular',
      'code_owner',
    ]);

    await mia.projectApprovalSettings.edit(1, { disable_overriding_approvers_per_merge_request: true });
    await expect(alice.mergeRequestApprovalRules.create(1, 7, { name: 'more', approvals_required: 1 })).rejects.toThrow(
      ForbiddenError,
    );
    await expect(client(OUTSIDER_TOKEN).mergeRequestApprovalRules.all(1, 7)).rejects.toThrow(NotFoundError);
  });
});
