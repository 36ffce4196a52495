import type { Decision } from '../../engine/policy';
import {
  anApprovalRule,
  aPolicy,
  aProjectSnapshot,
  aProtectedBranch,
  aRole,
  aSnapshot,
  aUserEntry,
  NOW,
} from '../../../test/support/builders/project-settings';
import { EDIT_APPROVAL_RULE } from './approvals/approvals.decide';
import { decideProjectSettings, type ProjectSettingsProjectSnapshot } from './project-settings.decide';
import { PROTECT_BRANCH, REPROTECT_BRANCH } from './protected-branches/protected-branches.decide';

const T = NOW.getTime();

function decide(policy: Record<string, unknown>, ...projects: ProjectSettingsProjectSnapshot[]): Decision[] {
  return decideProjectSettings(aPolicy(policy), aSnapshot(...projects), NOW);
}

/** Action and reason of each decision, for tables. */
function lines(decisions: readonly Decision[]): [string, string][] {
  return decisions.map((decision) => [decision.action, decision.reason]);
}

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
      protectedBranches: [
        aProtectedBranch({ allow_force_push: true }),
        aProtectedBranch({ name: 'release/*', push_access_levels: [aRole(0)], merge_access_levels: [aRole(40)] }),
      ],
      approvalRules: [anApprovalRule()],
    });
    const web = aProjectSnapshot({
      project: 'acme/web',
      projectId: 43,
      protectedBranches: [],
      approvalRules: [anApprovalRule({ id: 9 })],
    });
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
    const changed = aProjectSnapshot({
      protectedBranches: [aProtectedBranch({ push_access_levels: [aRole(30), aUserEntry(5)] })],
      parked: [parked],
    });
    expect(decideProjectSettings(aPolicy(), aSnapshot(changed), later)[0].key).toBe(
      `42:branch:main:reprotect_branch:${later.getTime()}`,
    );
    // A parked decision of another project or branch lends its key to nothing here.
    const elsewhere = { ...parked, key: `43:branch:main:reprotect_branch:${T}` };
    expect(decideProjectSettings(aPolicy(), aSnapshot({ ...project, parked: [elsewhere] }), later)[0].key).toBe(
      `42:branch:main:reprotect_branch:${later.getTime()}`,
    );
  });
});
