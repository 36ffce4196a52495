import type { Decision, HarmKind } from '../../../engine/policy';
import type {
  ProtectedBranch,
  ProtectedBranchAccess,
  ProtectedBranchAccessLevel,
} from '../../../gitlab/types/protected-branches';
import type { ProjectSettingsConfig } from '../project-settings.schema';
import {
  decision,
  NOT_AVAILABLE,
  type ProjectScope,
  scopeOf,
  type SectionDecisions,
  skip,
} from '../project-settings.scope';
import type { ProtectBranchParams, ProtectedBranchAllowedTo } from '../../../gitlab/types/protected-branches';
import {
  type AllowedEntity,
  type BranchProtection,
  branchParams,
  codeOwnerParams,
  forgetParams,
  protectionParams,
  reprotectionParams,
} from './protected-branches.params';
import { branchLevelName, type DeclaredProtectedBranch } from './protected-branches.schema';

/** Deciding the protected branches of a project: levels compared by number, since the forge answers with descriptions too. */

export const PROTECT_BRANCH = 'protect_branch';
/** Levels or allow_force_push differ: the forge changes neither in place, so the action unprotects, then protects. */
export const REPROTECT_BRANCH = 'reprotect_branch';
/** Only code_owner_approval_required differs: the one option the forge's `PATCH` changes. */
export const EDIT_PROTECTED_BRANCH = 'edit_protected_branch';
export const UNPROTECT_BRANCH = 'unprotect_branch';
/**
 * Drops the record an interrupted reprotect left once the forge shows the branch protected again, by whoever, or the
 * branch is no longer declared: users and groups a person left out are never given back later.
 */
export const FORGET_INTERRUPTED = 'forget_interrupted_protection';

/** What a reprotect cut between its unprotect and its protect leaves: mended first at every pass (Decision.repairs). */
export const BRANCH_UNPROTECTED: HarmKind = {
  kind: 'branch_unprotected',
  says: 'a declared branch left unprotected by a reprotect cut between its two calls',
};

/** The middle of the keys (see subjectOf): a branch's protection, and the record of its interrupted reprotect. */
export const SUBJECTS = {
  branch: (name: string) => `branch:${name}`,
  interrupted: (name: string) => `interrupted:${name}`,
} as const;

/** A protected branch as the forge lists it; `code_owner_approval_required` is absent where the tier lacks it. */
export type ObservedProtectedBranch = Pick<ProtectedBranch, 'name' | 'allow_force_push'> & {
  readonly push_access_levels: readonly ProtectedBranchAccess[];
  readonly merge_access_levels: readonly ProtectedBranchAccess[];
  readonly unprotect_access_levels: readonly ProtectedBranchAccess[];
  readonly code_owner_approval_required?: boolean;
};

/** What the section reads of a project, when the policy declares protected branches. */
export interface ProtectedBranchesPart {
  /** Every protection of the project (all of them, so prune can see the undeclared ones); absent: not available. */
  readonly protectedBranches?: readonly ObservedProtectedBranch[];
  /** Protections a reprotect removed and could not put back, by branch name: their protect restores them whole. */
  readonly interrupted?: Readonly<Record<string, BranchProtection>>;
}

type BranchScope = ProjectScope<ProtectedBranchesPart>;

/** The role levels of an access list; user and group entries (access_level null, higher tiers) are not roles. */
function roleLevels(entries: readonly ProtectedBranchAccess[] | undefined): ProtectedBranchAccessLevel[] {
  const levels = (entries ?? []).flatMap((entry) => (entry.access_level === null ? [] : [entry.access_level]));
  return [...new Set(levels)].sort((a, b) => a - b);
}

/** The users and groups of an access list, kept across a reprotect: the policy declares roles only. */
function entities(entries: readonly ProtectedBranchAccess[] | undefined): AllowedEntity[] {
  return (entries ?? []).flatMap((entry): AllowedEntity[] => {
    if (entry.access_level !== null) return [];
    if (typeof entry.user_id === 'number') return [{ user_id: entry.user_id }];
    if (typeof entry.group_id === 'number') return [{ group_id: entry.group_id }];
    return [];
  });
}

function levelsText(levels: readonly number[]): string {
  return levels.length === 0 ? 'none' : levels.map(branchLevelName).join(' + ');
}

/** Who an access list lets in, for people: `maintainer + user 3 + group 7`, `none`. */
export function accessText(entries: readonly ProtectedBranchAccess[]): string {
  const who = [...roleLevels(entries).map(branchLevelName), ...entities(entries).map(entityText)];
  return who.length === 0 ? 'none' : who.join(' + ');
}

/** A protection as the forge shows it now, for reasons: `push maintainer, merge developer`. */
export function protectionText(branch: ObservedProtectedBranch): string {
  const force = branch.allow_force_push ? ', force push allowed' : '';
  return `push ${accessText(branch.push_access_levels)}, merge ${accessText(branch.merge_access_levels)}${force}`;
}

export function entityText(entity: AllowedEntity): string {
  return 'user_id' in entity ? `user ${entity.user_id}` : `group ${entity.group_id}`;
}

/** The users and groups a kept protection names, each once: `user 3, group 7`. */
function keptEntities(protection: BranchProtection): string[] {
  const all = [
    ...(protection.allowed_to_push ?? []),
    ...(protection.allowed_to_merge ?? []),
    ...(protection.allowed_to_unprotect ?? []),
  ];
  return [...new Set(all.map(entityText))];
}

/** The change of one level, or undefined when the forge has exactly the declared role. */
function levelChange(
  field: string,
  declared: ProtectedBranchAccessLevel,
  observed: readonly ProtectedBranchAccess[] | undefined,
): string | undefined {
  const levels = roleLevels(observed);
  if (levels.length === 1 && levels[0] === declared) return undefined;
  return `${field} ${levelsText(levels)} → ${branchLevelName(declared)}`;
}

function declaredProtection(branch: DeclaredProtectedBranch): BranchProtection {
  return {
    name: branch.name,
    push_access_level: branch.push_access_level,
    merge_access_level: branch.merge_access_level,
    ...(branch.unprotect_access_level !== undefined ? { unprotect_access_level: branch.unprotect_access_level } : {}),
    allow_force_push: branch.allow_force_push,
    ...(branch.code_owner_approval_required !== undefined
      ? { code_owner_approval_required: branch.code_owner_approval_required }
      : {}),
  };
}

/**
 * The protection a reprotect creates: the declared one, and what the forge had that the policy does not declare (an
 * unprotect level of one role, code owner approval, users and groups), so unprotect-then-protect changes only that.
 */
function reprotection(branch: DeclaredProtectedBranch, observed: ObservedProtectedBranch): BranchProtection {
  const unprotect = roleLevels(observed.unprotect_access_levels);
  const codeOwner =
    observed.code_owner_approval_required === undefined
      ? undefined
      : (branch.code_owner_approval_required ?? observed.code_owner_approval_required);
  const unprotectLevel = branch.unprotect_access_level ?? (unprotect.length === 1 ? unprotect[0] : undefined);
  // Sent only where the forge has the option: a forge without it was reported (a skip), not asked.
  const { code_owner_approval_required: _declared, ...declared } = declaredProtection(branch);
  return {
    ...declared,
    ...(unprotectLevel !== undefined ? { unprotect_access_level: unprotectLevel } : {}),
    ...(codeOwner !== undefined ? { code_owner_approval_required: codeOwner } : {}),
    allowed_to_push: entities(observed.push_access_levels),
    allowed_to_merge: entities(observed.merge_access_levels),
    allowed_to_unprotect: entities(observed.unprotect_access_levels),
  };
}

/**
 * The protection as the forge shows it, as a protect would make it again: one role a list as its level (every tier),
 * several roles, users and groups as entries (higher tiers).
 */
function previousProtection(observed: ObservedProtectedBranch): ProtectBranchParams {
  const list = (entries: readonly ProtectedBranchAccess[]) => {
    const roles = roleLevels(entries);
    const who: ProtectedBranchAllowedTo[] = entities(entries);
    if (roles.length === 1) return { level: roles[0], allowed: who };
    return {
      level: undefined,
      allowed: [...roles.map((access_level): ProtectedBranchAllowedTo => ({ access_level })), ...who],
    };
  };
  const [push, merge, unprotect] = [
    list(observed.push_access_levels),
    list(observed.merge_access_levels),
    list(observed.unprotect_access_levels),
  ];
  return {
    name: observed.name,
    ...(push.level !== undefined ? { push_access_level: push.level } : {}),
    ...(merge.level !== undefined ? { merge_access_level: merge.level } : {}),
    ...(unprotect.level !== undefined ? { unprotect_access_level: unprotect.level } : {}),
    allow_force_push: observed.allow_force_push,
    ...(observed.code_owner_approval_required !== undefined
      ? { code_owner_approval_required: observed.code_owner_approval_required }
      : {}),
    ...(push.allowed.length > 0 ? { allowed_to_push: push.allowed } : {}),
    ...(merge.allowed.length > 0 ? { allowed_to_merge: merge.allowed } : {}),
    ...(unprotect.allowed.length > 0 ? { allowed_to_unprotect: unprotect.allowed } : {}),
  };
}

function compareBranch(
  scope: BranchScope,
  branch: DeclaredProtectedBranch,
  observed: ObservedProtectedBranch,
): Decision[] {
  const subject = `protected branch ${branch.name}`;
  const what = SUBJECTS.branch(branch.name);
  const changes = [
    levelChange('push_access_level', branch.push_access_level, observed.push_access_levels),
    levelChange('merge_access_level', branch.merge_access_level, observed.merge_access_levels),
    branch.unprotect_access_level === undefined
      ? undefined
      : levelChange('unprotect_access_level', branch.unprotect_access_level, observed.unprotect_access_levels),
    branch.allow_force_push === observed.allow_force_push
      ? undefined
      : `allow_force_push ${observed.allow_force_push} → ${branch.allow_force_push}`,
  ].filter((change): change is string => change !== undefined);

  const codeOwner = branch.code_owner_approval_required;
  const decisions: Decision[] = [];
  let codeOwnerChange: string | undefined;
  if (codeOwner !== undefined) {
    if (observed.code_owner_approval_required === undefined) {
      decisions.push(
        skip(scope, subject, `${what}:code_owner_approval_required`, `code_owner_approval_required ${NOT_AVAILABLE}`),
      );
    } else if (observed.code_owner_approval_required !== codeOwner) {
      codeOwnerChange = `code_owner_approval_required ${observed.code_owner_approval_required} → ${codeOwner}`;
    }
  }

  if (changes.length > 0) {
    const protection = reprotection(branch, observed);
    const all = codeOwnerChange ? [...changes, codeOwnerChange] : changes;
    decisions.unshift(
      decision(
        scope,
        REPROTECT_BRANCH,
        subject,
        what,
        all.join(', '),
        reprotectionParams({ ...scope.target, protection, was: previousProtection(observed) }),
      ),
    );
  } else if (codeOwnerChange !== undefined && codeOwner !== undefined) {
    const params = codeOwnerParams({ ...scope.target, name: branch.name, codeOwnerApprovalRequired: codeOwner });
    decisions.unshift(decision(scope, EDIT_PROTECTED_BRANCH, subject, what, codeOwnerChange, params));
  }
  return decisions;
}

/**
 * A declared branch that is not protected is protected first of all, before any other change of any project (and
 * after a reprotect cut between its two calls, as it was); records that no longer apply are forgotten with them.
 */
export function decideProtectedBranches(scope: BranchScope): SectionDecisions {
  const declared = scope.config.protected_branches;
  const first: Decision[] = [];
  const rest: Decision[] = [];
  if (!declared) return { first, rest };
  const observed = scope.snapshot.protectedBranches;
  if (!observed) return { first, rest: [skip(scope, 'protected branches', 'branches', NOT_AVAILABLE)] };
  const byName = new Map<string, ObservedProtectedBranch>();
  for (const branch of observed) if (!byName.has(branch.name)) byName.set(branch.name, branch);

  for (const branch of declared) {
    const found = byName.get(branch.name);
    if (!found) {
      const interrupted = scope.snapshot.interrupted?.[branch.name];
      // What the file declares wins; the rest comes back as the forge had it before the interrupted reprotect.
      const protection = interrupted ? { ...interrupted, ...declaredProtection(branch) } : declaredProtection(branch);
      const change = interrupted
        ? 'not protected (a reprotect was interrupted) → protect as before, with the declared levels'
        : 'not protected → protect';
      const params = protectionParams({ ...scope.target, protection });
      const protect = decision(
        scope,
        PROTECT_BRANCH,
        `protected branch ${branch.name}`,
        SUBJECTS.branch(branch.name),
        change,
        params,
      );
      // Unprotected by the bot itself: its own harm, which no refusal parks.
      first.push(interrupted ? { ...protect, repairs: BRANCH_UNPROTECTED.kind } : protect);
    } else {
      rest.push(...compareBranch(scope, branch, found));
    }
  }
  first.push(...forgetDecisions(scope, declared, byName));
  if (scope.config.prune) {
    const names = new Set(declared.map((branch) => branch.name));
    for (const branch of byName.values()) {
      if (names.has(branch.name)) continue;
      const params = branchParams({ ...scope.target, name: branch.name });
      rest.push(
        decision(
          scope,
          UNPROTECT_BRANCH,
          `protected branch ${branch.name}`,
          SUBJECTS.branch(branch.name),
          'protected, not declared → unprotect',
          params,
        ),
      );
    }
  }
  return { first, rest };
}

/**
 * The records of interrupted reprotects that no longer apply: the branch is protected on the forge (by anyone, with
 * whatever users and groups), or no longer declared. Only the policy's own state changes, but the audit trail shows it.
 */
function forgetDecisions(
  scope: BranchScope,
  declared: readonly DeclaredProtectedBranch[],
  byName: ReadonlyMap<string, ObservedProtectedBranch>,
): Decision[] {
  const decisions: Decision[] = [];
  for (const [name, kept] of Object.entries(scope.snapshot.interrupted ?? {})) {
    const found = byName.get(name);
    const stillDeclared = declared.some((branch) => branch.name === name);
    if (!found && stillDeclared) continue; // the protect of this pass restores it
    const who = keptEntities(kept);
    const dropped = who.length > 0 ? `; ${who.join(', ')} not given back` : '';
    const change = found
      ? `protected on the forge now (${protectionText(found)}) → forget the interrupted reprotect's record${dropped}`
      : `no longer declared → forget the interrupted reprotect's record${dropped}`;
    const params = forgetParams({ ...scope.target, name, kept });
    decisions.push(
      decision(scope, FORGET_INTERRUPTED, `protected branch ${name}`, SUBJECTS.interrupted(name), change, params),
    );
  }
  return decisions;
}

/**
 * A record of an interrupted reprotect whose project this pass did not read: out of the token's sight, read but not
 * among the projects decided on (no longer selected, its read failed), or gone (an administrator's 404).
 */
export interface RecordElsewhere {
  readonly projectId: number;
  /** Its path when the forge shows it, else its id. */
  readonly project: string | number;
  readonly kept: Readonly<Record<string, BranchProtection>>;
  readonly state: 'unseen' | 'outside' | 'gone';
  readonly why: string;
}

/**
 * What the records elsewhere call for: a gone project's are forgotten; any other stays the bot's open harm (a skip
 * that names it), shown until the project is read again and its branch protected.
 */
export function decideRecordsElsewhere(
  config: ProjectSettingsConfig,
  records: readonly RecordElsewhere[],
  now: Date,
): Decision[] {
  const decisions: Decision[] = [];
  for (const record of records) {
    const scope = scopeOf(config, { project: record.project, projectId: record.projectId }, now);
    for (const [name, kept] of Object.entries(record.kept)) {
      const subject = `protected branch ${name}`;
      if (record.state === 'gone') {
        const params = forgetParams({ ...scope.target, name, kept });
        decisions.push(
          decision(
            scope,
            FORGET_INTERRUPTED,
            subject,
            SUBJECTS.interrupted(name),
            `${record.why} → forget the interrupted reprotect's record`,
            params,
          ),
        );
      } else {
        decisions.push({
          ...skip(scope, subject, SUBJECTS.branch(name), `left unprotected by an interrupted reprotect; ${record.why}`),
          repairs: BRANCH_UNPROTECTED.kind,
        });
      }
    }
  }
  return decisions;
}
