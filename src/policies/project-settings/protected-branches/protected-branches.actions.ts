import { defineAction } from '../../../engine/action-params';
import type { ActionResult, PolicyAction, PolicyContext } from '../../../engine/policy';
import { ConflictError, NotFoundError, ValidationError } from '../../../gitlab/transport/errors';
import type { ProtectBranchParams } from '../../../gitlab/types/protected-branches';
import { checkedAction, type Subject } from '../project-settings.checked';
import type { ProjectSettingsConfig } from '../project-settings.schema';
import type { SectionRules } from '../project-settings.section';
import type { ObservedProject } from '../project-settings.scope';
import {
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
import { allowedOf, interruptedRecords, rememberInterrupted, rolesOnly, withExistingOnly } from './protected-branches.interrupted';
import { observeProtectedBranches } from './protected-branches.observer';
import { branchTarget, codeOwnerTarget, forgetTarget, protectionTarget, sameProtection } from './protected-branches.params';
import { branchLevelName } from './protected-branches.schema';

/** The protected branch actions; each that changes the forge goes out only while the branch is as the pass decided. */

const rules: SectionRules<ProtectedBranchesPart> = { observe: observeProtectedBranches, decide: decideProtectedBranches };

function branchSubject(name: string, config: ProjectSettingsConfig, snapshot: ObservedProject & ProtectedBranchesPart): Subject {
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
async function protect(context: PolicyContext, project: number, protection: ProtectBranchParams): Promise<'protected' | 'already'> {
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
  const who = [...new Set(allowedOf(protection).flatMap((entry) => ('access_level' in entry ? [] : [entityText(entry)])))];
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
      if (!(error instanceof ValidationError) || allowedOf(sent).length === 0) throw error;
      const refused = [...new Set(allowedOf(sent).flatMap((entry) => ('access_level' in entry ? [] : [entityText(entry)])))];
      context.logger.warn(`project ${project}: the forge refused ${decided.name} with ${refused.join(', ')} (${error.summary}); protecting it with its roles alone`);
      sent = rolesOnly(sent);
      outcome = await protect(context, project, sent);
      leftOut.push(`${refused.join(', ')} (the forge refused them: ${error.message})`);
    }
    await rememberInterrupted(context, project, decided.name, undefined);
    if (outcome === 'already') return { detail: `${decided.name} already protected` };
    return { detail: `protected ${decided.name} (${levels(sent)})${leftOut.length > 0 ? `; left out ${leftOut.join(', ')}` : ''}` };
  },
});

/**
 * The forge changes a protection's levels only by unprotecting and protecting again. A protect that fails leaves the
 * branch unprotected: what was removed is recorded, the error thrown, and the next pass protects the branch first.
 */
const reprotectBranch = checkedAction(rules, {
  action: REPROTECT_BRANCH,
  read: protectionTarget,
  subject: (target, config, snapshot) => branchSubject(target.protection.name, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    const { project, protection } = target;
    try {
      await context.client.protectedBranches.unprotect(project, protection.name);
    } catch (error) {
      // Unprotected already (by someone, or by an attempt whose answer was lost): the protect below is what is left.
      if (!(error instanceof NotFoundError)) throw error;
    }
    try {
      const outcome = await protect(context, project, protection);
      if (outcome === 'already') return { detail: `${protection.name} was protected again by someone else meanwhile; the next pass compares it` };
    } catch (error) {
      await rememberInterrupted(context, project, protection.name, protection);
      context.logger.error(`project ${project}: ${protection.name} is unprotected after a failed reprotect; the next pass protects it first`);
      throw error;
    }
    await rememberInterrupted(context, project, protection.name, undefined);
    return { detail: `reprotected ${protection.name} (${levels(protection)})` };
  },
});

const editProtectedBranch = checkedAction(rules, {
  action: EDIT_PROTECTED_BRANCH,
  read: codeOwnerTarget,
  subject: (target, config, snapshot) => branchSubject(target.name, config, snapshot),
  run: async (target, context): Promise<ActionResult> => {
    await context.client.protectedBranches.edit(target.project, target.name, { code_owner_approval_required: target.codeOwnerApprovalRequired });
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
  unchecked: "changes only the policy's own record in Redis (what an interrupted reprotect removed), never the forge; it is decided on the forge as this pass read it, and dropping it can only restore less",
  run: async (target, context): Promise<ActionResult> => {
    const kept = await interruptedRecords(context, target.project);
    if (!(target.name in kept)) return { detail: `nothing kept about ${target.name} any more` };
    if (!sameProtection(kept[target.name], target.kept)) {
      return { outcome: 'stale', detail: `the record of ${target.name} changed since the pass read it (a newer interrupted reprotect); kept` };
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
