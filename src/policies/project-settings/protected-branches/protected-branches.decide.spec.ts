import { SKIP, type Decision } from '../../../engine/policy';
import {
  aGroupEntry,
  aPolicy,
  aProjectSnapshot,
  aProtectedBranch,
  aRole,
  aSnapshot,
  aUserEntry,
  NOW,
} from '../../../../test/support/builders/project-settings';
import { decideProjectSettings, type ProjectSettingsProjectSnapshot } from '../project-settings.decide';
import {
  EDIT_PROTECTED_BRANCH,
  FORGET_INTERRUPTED,
  PROTECT_BRANCH,
  REPROTECT_BRANCH,
  UNPROTECT_BRANCH,
} from './protected-branches.decide';

const T = NOW.getTime();

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
    [
      'push level',
      { push_access_levels: [aRole(30)] },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: push_access_level developer → maintainer',
    ],
    [
      'merge level',
      { merge_access_levels: [aRole(40)] },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: merge_access_level maintainer → developer',
    ],
    [
      'force push allowed',
      { allow_force_push: true },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: allow_force_push true → false',
    ],
    [
      'two roles where one is declared',
      { push_access_levels: [aRole(30), aRole(40)] },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: push_access_level developer + maintainer → maintainer',
    ],
    [
      'users only, no role',
      { push_access_levels: [aUserEntry(5)] },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: push_access_level none → maintainer',
    ],
    [
      'several at once',
      { push_access_levels: [aRole(0)], merge_access_levels: [aRole(60)], allow_force_push: true },
      REPROTECT_BRANCH,
      'acme/api: protected branch main: push_access_level no_access → maintainer, merge_access_level admin → developer, allow_force_push true → false',
    ],
  ])('%s differs', (_title, branch, action, reason) => {
    const decisions = decide({}, aProjectSnapshot({ protectedBranches: [aProtectedBranch(branch)] }));
    expect(lines(decisions)).toEqual([[action, reason]]);
    expect(decisions[0]).toMatchObject({
      target: 'acme/api protected branch main',
      key: `42:branch:main:reprotect_branch:${T}`,
    });
  });

  it('protects a declared branch that is not protected, with the declared protection', () => {
    const decisions = decide(
      {
        protected_branches: [
          {
            name: 'release/*',
            push_access_level: 'no_access',
            merge_access_level: 40,
            unprotect_access_level: 60,
            allow_force_push: true,
            code_owner_approval_required: true,
          },
        ],
      },
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
    const byNumber = {
      protected_branches: [{ name: 'main', push_access_level: 40, merge_access_level: 30, unprotect_access_level: 40 }],
    };
    const byName = {
      protected_branches: [
        {
          name: 'main',
          push_access_level: 'maintainer',
          merge_access_level: 'developer',
          unprotect_access_level: 'maintainer',
        },
      ],
    };
    expect(decide(byNumber, aProjectSnapshot())).toEqual([]);
    expect(decide(byName, aProjectSnapshot())).toEqual([]);
    const drifted = aProjectSnapshot({
      protectedBranches: [aProtectedBranch({ unprotect_access_levels: [aRole(60)] })],
    });
    expect(decide(byNumber, drifted)).toEqual(decide(byName, drifted));
    expect(lines(decide(byName, drifted))).toEqual([
      [REPROTECT_BRANCH, 'acme/api: protected branch main: unprotect_access_level admin → maintainer'],
    ]);
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
      // The protection as it was, put back at once if the forge refuses the new one.
      was: {
        name: 'main',
        push_access_level: 40,
        merge_access_level: 30,
        unprotect_access_level: 60,
        allow_force_push: true,
        code_owner_approval_required: true,
        allowed_to_push: [{ user_id: 5 }],
        allowed_to_merge: [{ group_id: 9 }],
      },
    });
  });

  it('keeps several roles of a list (higher tiers) as entries of the protection as it was', () => {
    const twoRoles = aProtectedBranch({
      push_access_levels: [aRole(30), aRole(40), aUserEntry(5)],
      allow_force_push: true,
    });
    const [reprotect] = decide({}, aProjectSnapshot({ protectedBranches: [twoRoles] }));
    expect(reprotect.params.was).toMatchObject({
      allowed_to_push: [{ access_level: 30 }, { access_level: 40 }, { user_id: 5 }],
    });
    expect(reprotect.params.was).not.toHaveProperty('push_access_level');
  });

  it('names the protect after an interrupted reprotect as a repair of its own harm; a branch a person unprotected is no repair', () => {
    const kept = {
      name: 'main',
      push_access_level: 40 as const,
      merge_access_level: 30 as const,
      allow_force_push: false,
    };
    expect(decide({}, aProjectSnapshot({ protectedBranches: [], interrupted: { main: kept } }))[0]).toMatchObject({
      action: 'protect_branch',
      repairs: 'branch_unprotected',
    });
    expect(decide({}, aProjectSnapshot({ protectedBranches: [] }))[0]).not.toHaveProperty('repairs');
  });

  it('edits code owner approval in place when only it differs', () => {
    const policy = {
      protected_branches: [
        { name: 'main', push_access_level: 40, merge_access_level: 30, code_owner_approval_required: true },
      ],
    };
    const decisions = decide(policy, aProjectSnapshot());
    expect(lines(decisions)).toEqual([
      [EDIT_PROTECTED_BRANCH, 'acme/api: protected branch main: code_owner_approval_required false → true'],
    ]);
    expect(decisions[0].params).toEqual({
      project: 42,
      source: 'acme/api',
      name: 'main',
      code_owner_approval_required: true,
    });
  });

  it('folds a code owner change into a reprotect that happens anyway', () => {
    const policy = {
      protected_branches: [
        { name: 'main', push_access_level: 40, merge_access_level: 30, code_owner_approval_required: true },
      ],
    };
    const decisions = decide(
      policy,
      aProjectSnapshot({ protectedBranches: [aProtectedBranch({ allow_force_push: true })] }),
    );
    expect(lines(decisions)).toEqual([
      [
        REPROTECT_BRANCH,
        'acme/api: protected branch main: allow_force_push true → false, code_owner_approval_required false → true',
      ],
    ]);
    expect(decisions[0].params).toMatchObject({ code_owner_approval_required: true });
  });

  it('reports code owner approval as not available where the forge lacks it, and sends it nowhere', () => {
    const policy = {
      protected_branches: [
        { name: 'main', push_access_level: 40, merge_access_level: 30, code_owner_approval_required: true },
      ],
    };
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
    const [reprotect, skip] = decide(
      policy,
      aProjectSnapshot({ protectedBranches: [{ ...lowerTier, allow_force_push: true }] }),
    );
    expect([reprotect.action, skip.action]).toEqual([REPROTECT_BRANCH, SKIP]);
    expect(reprotect.params).not.toHaveProperty('code_owner_approval_required');
  });

  it('leaves undeclared protections alone without prune, and unprotects them with it', () => {
    const project = aProjectSnapshot({ protectedBranches: [aProtectedBranch(), aProtectedBranch({ name: 'legacy' })] });
    expect(decide({}, project)).toEqual([]);
    const decisions = decide({ prune: true }, project);
    expect(lines(decisions)).toEqual([
      [UNPROTECT_BRANCH, 'acme/api: protected branch legacy: protected, not declared → unprotect'],
    ]);
    expect(decisions[0].params).toEqual({ project: 42, source: 'acme/api', name: 'legacy' });
  });

  it('reports protected branches as not available when the forge has no answer for them', () => {
    expect(lines(decide({}, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([
      [SKIP, 'skip: acme/api: protected branches: not available on this forge'],
    ]);
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
    expect(lines(decisions)).toEqual([
      [
        PROTECT_BRANCH,
        'acme/api: protected branch main: not protected (a reprotect was interrupted) → protect as before, with the declared levels',
      ],
    ]);
    expect(decisions[0].params).toMatchObject({
      unprotect_access_level: 60,
      allowed_to_push: [{ user_id: 3 }, { group_id: 7 }],
    });
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
    expect(decisions[0]).toMatchObject({
      key: `42:interrupted:main:${FORGET_INTERRUPTED}:${T}`,
      params: { project: 42, source: 'acme/api', name: 'main', kept },
    });
    expect(decisions[1].params).not.toHaveProperty('allowed_to_push');
  });

  it('forgets the record of a branch the file no longer declares, and keeps records when the section could not be read', () => {
    const other = { ...kept, name: 'stable' };
    expect(lines(decide({}, aProjectSnapshot({ interrupted: { stable: other } })))).toEqual([
      [
        FORGET_INTERRUPTED,
        "acme/api: protected branch stable: no longer declared → forget the interrupted reprotect's record; user 3, group 7 not given back",
      ],
    ]);
    expect(lines(decide({}, aProjectSnapshot({ protectedBranches: undefined, interrupted: { main: kept } })))).toEqual([
      [SKIP, 'skip: acme/api: protected branches: not available on this forge'],
    ]);
  });
});
