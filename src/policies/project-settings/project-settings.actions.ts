import { defineAction } from '../../engine/action-params';
import type { ActionResult, PolicyAction, PolicyContext } from '../../engine/policy';

const PRECONDITION_PENDING = 'interim: preconditions are being added';
import { readJsonObject } from '../../engine/policy-state';
import {
  ApiError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
} from '../../gitlab/transport/errors';
import type { IntegrationParamsBySlug } from '../../gitlab/types/integrations';
import type { ProtectBranchParams } from '../../gitlab/types/protected-branches';
import {
  CREATE_APPROVAL_RULE,
  DELETE_APPROVAL_RULE,
  DISABLE_INTEGRATION,
  EDIT_APPROVAL_RULE,
  EDIT_APPROVAL_SETTINGS,
  EDIT_PROTECTED_BRANCH,
  PROTECT_BRANCH,
  REPROTECT_BRANCH,
  SET_INTEGRATION,
  UNPROTECT_BRANCH,
} from './project-settings.decide';
import {
  branchTarget,
  codeOwnerTarget,
  createRuleTarget,
  deleteRuleTarget,
  editRuleTarget,
  fingerprintStateKey,
  integrationRequest,
  interruptedStateKey,
  integrationTarget,
  protectionTarget,
  setIntegrationTarget,
  settingsTarget,
} from './project-settings.params';
import { branchLevelName, type ProjectSettingsConfig, projectSettingsPolicy } from './project-settings.schema';

/**
 * The effects of the project_settings decisions, one per action; the executor is their only caller. Details name
 * what was changed in the policy's own words, never the forge's answer (which may echo a secret).
 */

/** A refusal that the same request, sent again at once, would meet again. */
function final(error: unknown): boolean {
  return error instanceof NotFoundError || error instanceof ValidationError || error instanceof ForbiddenError || error instanceof UnauthorizedError;
}

/**
 * Protects a branch, sending the request a second time at once when the first failed for a reason that may pass
 * (a 5xx, a reset): an unprotected declared branch is what this policy repairs first. A 409 means the branch is
 * protected: by the first attempt whose answer was lost when it comes on the second.
 */
async function protect(context: PolicyContext, project: number, protection: ProtectBranchParams): Promise<'protected' | 'already'> {
  try {
    await context.client.protectedBranches.protect(project, protection);
    return 'protected';
  } catch (error) {
    if (error instanceof ConflictError) return 'already';
    if (final(error)) throw error;
    context.logger.warn(`project ${project}: protecting ${protection.name} failed (${error instanceof ApiError ? error.summary : String(error)}); trying again at once`);
  }
  try {
    await context.client.protectedBranches.protect(project, protection);
    return 'protected';
  } catch (error) {
    if (error instanceof ConflictError) return 'protected';
    throw error;
  }
}

function levels(protection: ProtectBranchParams): string {
  const named = (level: number | undefined) => (level === undefined ? 'maintainer' : branchLevelName(level));
  return `push ${named(protection.push_access_level)}, merge ${named(protection.merge_access_level)}`;
}

/**
 * Keeps (protection given) or forgets (undefined) what a reprotect removed and could not put back, so that the
 * protect of the next pass restores it whole, not only what the policy declares.
 */
async function rememberInterrupted(context: PolicyContext, project: number, name: string, protection: ProtectBranchParams | undefined): Promise<void> {
  const key = interruptedStateKey(project);
  const kept = readJsonObject(await context.state.get(key)) ?? {};
  if (protection === undefined && !(name in kept)) return;
  const { [name]: _forgotten, ...others } = kept;
  const next = protection === undefined ? others : { ...others, [name]: protection };
  await context.state.set(key, JSON.stringify(next));
}

const protectBranch = defineAction({
  read: protectionTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    const outcome = await protect(context, target.project, target.protection);
    await rememberInterrupted(context, target.project, target.protection.name, undefined);
    return { detail: outcome === 'already' ? `${target.protection.name} already protected` : `protected ${target.protection.name} (${levels(target.protection)})` };
  },
});

/**
 * The forge changes a protection's levels only by unprotecting and protecting again (spec 02 §4). A protect that
 * fails twice leaves the branch unprotected: the error is thrown, and the next pass sees the branch unprotected and
 * protects it before anything else.
 */
const reprotectBranch = defineAction({
  read: protectionTarget,
  unchecked: PRECONDITION_PENDING,
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

const editProtectedBranch = defineAction({
  read: codeOwnerTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.protectedBranches.edit(target.project, target.name, { code_owner_approval_required: target.codeOwnerApprovalRequired });
    return { detail: `${target.name}: code_owner_approval_required ${target.codeOwnerApprovalRequired}` };
  },
});

/** A 404 (unprotected already) is the executor's `gone`. */
const unprotectBranch = defineAction({
  read: branchTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.protectedBranches.unprotect(target.project, target.name);
    return { detail: `unprotected ${target.name}` };
  },
});

const editApprovalSettings = defineAction({
  read: settingsTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalSettings.edit(target.project, target.settings);
    return { detail: `set ${Object.keys(target.settings).join(', ')}` };
  },
});

/**
 * A POST creates a second rule of the same name when the first answer was lost (the forge refuses duplicates, but a
 * forge that does not would be left with two): the name is looked up first.
 */
const createApprovalRule = defineAction({
  read: createRuleTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    for await (const rule of context.client.projectApprovalRules.all(target.project)) {
      if (rule.name === target.rule.name) return { detail: `approval rule ${target.rule.name} already there (rule ${rule.id})` };
    }
    const created = await context.client.projectApprovalRules.create(target.project, target.rule);
    return { detail: `created approval rule ${target.rule.name} (rule ${created.id})` };
  },
});

const editApprovalRule = defineAction({
  read: editRuleTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalRules.edit(target.project, target.ruleId, target.rule);
    return { detail: `updated approval rule ${target.rule.name} (rule ${target.ruleId})` };
  },
});

const deleteApprovalRule = defineAction({
  read: deleteRuleTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.projectApprovalRules.remove(target.project, target.ruleId);
    return { detail: `deleted approval rule ${target.name} (rule ${target.ruleId})` };
  },
});

/** The policy's configuration, which alone holds the secrets an integration is set with. */
function policyConfig(context: PolicyContext): ProjectSettingsConfig {
  const policy = context.policy;
  if (policy?.type !== projectSettingsPolicy.type) throw new Error('project_settings: the policy configuration is not available to set_integration');
  return policy as ProjectSettingsConfig;
}

/**
 * An error that cannot carry a secret: the executor logs and audits the error's message, and a forge may echo what
 * it was sent. A NotFoundError (the project is gone) keeps its class, the executor's `gone`.
 */
function withoutSecrets(error: unknown, secrets: readonly string[]): unknown {
  const forms = secrets.filter((secret) => secret !== '').flatMap((secret) => [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]);
  const hide = (text: string) => forms.reduce((result, form) => result.split(form).join('(secret)'), text);
  if (error instanceof NotFoundError) {
    return new NotFoundError({ status: error.status, method: error.method, path: error.path, body: undefined, message: hide(error.message), headers: error.headers });
  }
  const text = error instanceof ApiError ? error.summary : error instanceof Error ? error.message : String(error);
  return new Error(hide(text));
}

const setIntegration = defineAction({
  read: setIntegrationTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    const config = policyConfig(context);
    const { body, fingerprints } = integrationRequest(config, target);
    const secrets = target.secrets.flatMap((name) => (typeof body[name] === 'string' ? [body[name]] : []));
    try {
      // The body is the declared parameters of this slug, checked against the client's table when the file was loaded.
      await context.client.integrations.edit(target.project, target.slug, body as unknown as IntegrationParamsBySlug[typeof target.slug]);
    } catch (error) {
      throw withoutSecrets(error, secrets);
    }
    // Only once the forge has taken them: a fingerprint kept for a value never set would hide the drift for good.
    const key = fingerprintStateKey(target.project);
    const kept = readJsonObject(await context.state.get(key)) ?? {};
    await context.state.set(key, JSON.stringify({ ...kept, ...fingerprints }));
    const names = Object.keys(body).filter((name) => name !== 'active');
    return { detail: `set ${target.slug}: ${names.map((name) => (target.secrets.includes(name) ? `${name} (secret)` : name)).join(', ')}` };
  },
});

/** A 404 (not set any more) is the executor's `gone`. */
const disableIntegration = defineAction({
  read: integrationTarget,
  unchecked: PRECONDITION_PENDING,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.integrations.remove(target.project, target.slug);
    return { detail: `removed ${target.slug}` };
  },
});

export const projectSettingsActions: Readonly<Record<string, PolicyAction>> = {
  [PROTECT_BRANCH]: protectBranch,
  [REPROTECT_BRANCH]: reprotectBranch,
  [EDIT_PROTECTED_BRANCH]: editProtectedBranch,
  [UNPROTECT_BRANCH]: unprotectBranch,
  [EDIT_APPROVAL_SETTINGS]: editApprovalSettings,
  [CREATE_APPROVAL_RULE]: createApprovalRule,
  [EDIT_APPROVAL_RULE]: editApprovalRule,
  [DELETE_APPROVAL_RULE]: deleteApprovalRule,
  [SET_INTEGRATION]: setIntegration,
  [DISABLE_INTEGRATION]: disableIntegration,
};
