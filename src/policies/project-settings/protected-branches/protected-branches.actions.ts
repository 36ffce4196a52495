import { defineAction } from '../../../engine/action-params';
import { type ActionResult, HarmLeftError, type PolicyAction, type ActContext } from '../../../engine/policy';
import {
  ApiError,
  certainlyNotActed,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
} from '../../../gitlab/transport/errors';
import type { ProtectBranchParams } from '../../../gitlab/types/protected-branches';
import { checkedAction, type Subject } from '../project-settings.checked';
import type { ProjectSettingsConfig } from '../project-settings.schema';
import type { SectionRules } from '../project-settings.section';
import type { ObservedProject } from '../project-settings.scope';
import {
  BRANCH_UNPROTECTED,
  decideProtectedBranches,
  EDIT_PROTECTED_BRANCH,
  entityText,
  FORGET_INTERRUPTED,
  PROTECT_BRANCH,
  type ProtectedBranchesPart,
  protectionText,
  REPROTECT_BRANCH,
  SUBJECTS,
  UNPROTECT_BRANCH,
} from './protected-branches.decide';
import {
  allowedOf,
  interruptedRecords,
  rememberInterrupted,
  rolesOnly,
  withExistingOnly,
} from './protected-branches.interrupted';
import { observeProtectedBranches } from './protected-branches.observer';
import {
  branchTarget,
  codeOwnerTarget,
  forgetTarget,
  protectionTarget,
  reprotectionTarget,
  sameProtection,
} from './protected-branches.params';
import { branchLevelName } from './protected-branches.schema';

/** The protected branch actions; each that changes the forge goes out only while the branch is as the pass decided. */

const rules: SectionRules<ProtectedBranchesPart> = {
  observe: observeProtectedBranches,
  decide: decideProtectedBranches,
};

function branchSubject(
  name: string,
  config: ProjectSettingsConfig,
  snapshot: ObservedProject & ProtectedBranchesPart,
): Subject {
  const found = snapshot.protectedBranches?.find((branch) => branch.name === name);
  return {
    what: SUBJECTS.branch(name),
    related: [SUBJECTS.branch(name)],
    now: found ? `${name} is protected with ${protectionText(found)} now` : `${name} is not protected now`,
    declared: config.protected_branches?.some((branch) => branch.name === name) ?? false,
  };
}

/**
 * The client sends a protect again after a 5xx or a lost answer: a second protection of the same name is refused with
 * 409, which means protected already (by someone, or by the lost attempt). A refusal (403, 400/422) is parked.
 */
async function protect(
  context: ActContext,
  project: number,
  protection: ProtectBranchParams,
): Promise<'protected' | 'already'> {
  try {
    await context.client.protectedBranches.protect(project, protection);
    return 'protected';
  } catch (error) {
    if (error instanceof ConflictError) return 'already';
    throw error;
  }
}

/** A protection for people: `push maintainer, merge developer, with user 3`. */
function levels(protection: ProtectBranchParams): string {
  const named = (level: number | undefined) => (level === undefined ? 'maintainer' : branchLevelName(level));
  const who = [
    ...new Set(allowedOf(protection).flatMap((entry) => ('access_level' in entry ? [] : [entityText(entry)]))),
  ];
  return `push ${named(protection.push_access_level)}, merge ${named(protection.merge_access_level)}${who.length > 0 ? `, with ${who.join(', ')}` : ''}`;
}

/**
 * After an interrupted reprotect, what it kept is restored with the users and groups that still exist; if the forge
 * still refuses them (no longer members: 400/422), the branch is protected with its roles alone, never left open.
 */
const protectBranch = checkedAction(rules, {
  action: PROTECT_BRANCH,
  read: protectionTarget,
  subject: (target, config, snapshot) => branchSubject(target.protection.name, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    const { project, protection: decided } = target;
    const existing = await withExistingOnly(context, decided);
    let sent = existing.protection;
    const leftOut = [...existing.leftOut];
    let outcome: 'protected' | 'already';
    try {
      outcome = await protect(context, project, sent);
    } catch (error) {
      if (error instanceof NotFoundError && (await absence(context, project)) === 'gone') {
        await rememberInterrupted(context, project, decided.name, undefined);
        return {
          outcome: 'stale',
          detail: `project ${project} is gone (an administrator's token no longer finds it): nothing to protect`,
        };
      }
      if (!(error instanceof ValidationError) || allowedOf(sent).length === 0) throw error;
      const refused = [
        ...new Set(allowedOf(sent).flatMap((entry) => ('access_level' in entry ? [] : [entityText(entry)]))),
      ];
      context.logger.warn(
        `project ${project}: the forge refused ${decided.name} with ${refused.join(', ')} (${error.summary}); protecting it with its roles alone`,
      );
      sent = rolesOnly(sent);
      outcome = await protect(context, project, sent);
      leftOut.push(`${refused.join(', ')} (the forge refused them: ${error.message})`);
    }
    await rememberInterrupted(context, project, decided.name, undefined);
    if (outcome === 'already') return { detail: `${decided.name} already protected` };
    return {
      detail: `protected ${decided.name} (${levels(sent)})${leftOut.length > 0 ? `; left out ${leftOut.join(', ')}` : ''}`,
    };
  },
});

/** Maintainer: the least role that protects a branch. */
const MAINTAINER = 40;

/**
 * Why the token may not protect branches of `project` now (not an administrator, below Maintainer there), or undefined:
 * read before a reprotect's unprotect, so that rights already gone never open the branch.
 */
async function cannotProtect(context: ActContext, project: number): Promise<string | undefined> {
  const me = await context.client.users.current();
  if ('is_admin' in me && me.is_admin === true) return undefined;
  const { permissions } = await context.client.projects.show(project);
  const level = Math.max(permissions?.project_access?.access_level ?? 0, permissions?.group_access?.access_level ?? 0);
  return level >= MAINTAINER
    ? undefined
    : `the token may not protect branches of project ${project} now (access level ${level}, not an administrator; Maintainer is ${MAINTAINER}): nothing unprotected`;
}

/** Whether a project that answered 404 is gone (to an administrator, who sees every project) or out of sight now. */
async function absence(context: ActContext, project: number): Promise<'gone' | 'unseen' | 'there'> {
  try {
    await context.client.projects.show(project);
    return 'there';
  } catch (error) {
    if (!(error instanceof NotFoundError || error instanceof ForbiddenError)) throw error;
    const me = await context.client.users.current();
    return error instanceof NotFoundError && 'is_admin' in me && me.is_admin === true ? 'gone' : 'unseen';
  }
}

/**
 * The forge changes a protection's levels only by unprotecting and protecting again. The intent is recorded before
 * the unprotect, so a cut anywhere is found by the next pass, which protects the branch before anything else (a
 * repair, never parked). A protect refused puts the protection back as it was at once, where the forge allows it.
 */
const reprotectBranch = checkedAction(rules, {
  action: REPROTECT_BRANCH,
  read: reprotectionTarget,
  subject: (target, config, snapshot) => branchSubject(target.protection.name, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    const { project, protection, was } = target;
    const cannot = await cannotProtect(context, project);
    if (cannot) return { outcome: 'stale', detail: cannot };
    await rememberInterrupted(context, project, protection.name, protection);
    try {
      await context.client.protectedBranches.unprotect(project, protection.name);
    } catch (error) {
      // Unprotected already (by someone, or by an attempt whose answer was lost): the protect below is what is left.
      if (!(error instanceof NotFoundError)) {
        // Refused, or never sent: still protected, so there is nothing to repair.
        if (certainlyNotActed(error) || (error instanceof ApiError && error.status < 500))
          await rememberInterrupted(context, project, protection.name, undefined);
        throw error;
      }
    }
    try {
      const outcome = await protect(context, project, protection);
      await rememberInterrupted(context, project, protection.name, undefined);
      if (outcome === 'already')
        return {
          detail: `${protection.name} was protected again by someone else meanwhile; the next pass compares it`,
        };
    } catch (error) {
      if (!(await afterFailedProtect(context, project, protection.name, was, error))) throw error;
      throw new HarmLeftError(
        BRANCH_UNPROTECTED.kind,
        `${protection.name} is unprotected: the protect after the unprotect failed`,
        error,
      );
    }
    return { detail: `reprotected ${protection.name} (${levels(protection)})` };
  },
});

/**
 * The branch is unprotected and the protect failed: put back as it was when the forge takes it, forget the record when
 * the project is gone, and otherwise keep it for the repair (and say which it is). True while the branch is left open.
 */
async function afterFailedProtect(
  context: ActContext,
  project: number,
  name: string,
  was: ProtectBranchParams | undefined,
  error: unknown,
): Promise<boolean> {
  const why = error instanceof ApiError ? error.summary : String(error);
  if (error instanceof NotFoundError) {
    const found = await absence(context, project).catch(() => 'unseen' as const);
    if (found === 'gone') {
      await rememberInterrupted(context, project, name, undefined);
      context.logger.warn(
        `project ${project} is gone (an administrator's token no longer finds it): its reprotect of ${name} ends with it`,
      );
      return false;
    }
    if (found === 'unseen') {
      context.logger.error(
        `project ${project}: out of the token's sight (${why}) between the unprotect and the protect of ${name}; it is protected first once it can be seen`,
      );
      return true;
    }
  }
  if (was) {
    try {
      await protect(context, project, was);
      await rememberInterrupted(context, project, name, undefined);
      context.logger.warn(
        `project ${project}: the protect of ${name} was refused (${why}); its protection was put back as it was`,
      );
      return false;
    } catch (restore) {
      context.logger.error(
        `project ${project}: putting ${name}'s protection back as it was failed too (${restore instanceof ApiError ? restore.summary : String(restore)})`,
      );
    }
  }
  context.logger.error(
    `project ${project}: ${name} is unprotected after a failed reprotect (${why}); it is repaired first, at every pass, until the forge takes it`,
  );
  return true;
}

const editProtectedBranch = checkedAction(rules, {
  action: EDIT_PROTECTED_BRANCH,
  read: codeOwnerTarget,
  subject: (target, config, snapshot) => branchSubject(target.name, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.protectedBranches.edit(target.project, target.name, {
      code_owner_approval_required: target.codeOwnerApprovalRequired,
    });
    return { detail: `${target.name}: code_owner_approval_required ${target.codeOwnerApprovalRequired}` };
  },
});

/** A 404 (unprotected already) is the executor's `gone`. */
const unprotectBranch = checkedAction(rules, {
  action: UNPROTECT_BRANCH,
  read: branchTarget,
  subject: (target, config, snapshot) => branchSubject(target.name, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.protectedBranches.unprotect(target.project, target.name);
    return { detail: `unprotected ${target.name}` };
  },
});

/** Drops an interrupted reprotect's record, unless a newer reprotect was interrupted since the pass read it. */
const forgetInterrupted = defineAction({
  read: forgetTarget,
  unchecked:
    "changes only the policy's own record in Redis (what an interrupted reprotect removed), never the forge; it is decided on the forge as this pass read it, and dropping it can only restore less",
  run: async (target, context): Promise<ActionResult> => {
    const kept = await interruptedRecords(context, target.project);
    if (!(target.name in kept)) return { detail: `nothing kept about ${target.name} any more` };
    if (!sameProtection(kept[target.name], target.kept)) {
      return {
        outcome: 'stale',
        detail: `the record of ${target.name} changed since the pass read it (a newer interrupted reprotect); kept`,
      };
    }
    await rememberInterrupted(context, target.project, target.name, undefined);
    return { detail: `forgot the interrupted reprotect of ${target.name}` };
  },
});

export const protectedBranchActions: Readonly<Record<string, PolicyAction>> = {
  [PROTECT_BRANCH]: protectBranch,
  [REPROTECT_BRANCH]: reprotectBranch,
  [EDIT_PROTECTED_BRANCH]: editProtectedBranch,
  [UNPROTECT_BRANCH]: unprotectBranch,
  [FORGET_INTERRUPTED]: forgetInterrupted,
};
