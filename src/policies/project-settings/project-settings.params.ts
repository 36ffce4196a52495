import { createHash } from 'node:crypto';
import { z } from 'zod';
import { param, readParams } from '../../engine/action-params';
import type { ActionParams, JsonValue } from '../../engine/policy';
import type { EditProjectApprovalSettingsParams, ProjectApprovalRuleParams } from '../../gitlab/types/approvals';
import { INTEGRATION_SLUGS, integrationParameters, type IntegrationSlug } from '../../gitlab/types/integrations';
import { PROTECTED_BRANCH_ACCESS_LEVELS, type ProtectBranchParams, type ProtectedBranchAccessLevel } from '../../gitlab/types/protected-branches';
import type { ProjectSettingsConfig } from './project-settings.schema';

/**
 * What each project_settings action carries (plain JSON, so it survives the queue and the unsettled targets) and how
 * it is read back. A missing or mistyped value is a bug, never something to send to the forge.
 *
 * Secrets are never in these params. `plan --json` prints params, the engine keeps the params of an unsettled action
 * in Redis (and of a delayed one in the queue), so a value here is a value shown and stored. set_integration names its
 * secret parameters instead, and the action reads their values from the policy's configuration when it runs (see
 * integrationRequest); a fingerprint is not carried either, since a fingerprint of a weak password can be guessed
 * back from a printed plan.
 */

const POLICY = 'project_settings';

/** Where a change applies: the project's numeric id, and the project as the policy lists it (`acme/api` or `42`). */
export interface ProjectTarget {
  readonly project: number;
  /** The project as configured: an unsettled change is looked at again only while the policy still covers it. */
  readonly source: string;
}

const projectShape = { project: param.integer(), source: param.text() };

function projectParams(target: ProjectTarget): { project: number; source: string } {
  return { project: target.project, source: target.source };
}

const level = () =>
  z.union(
    Object.values(PROTECTED_BRANCH_ACCESS_LEVELS).map((value) => z.literal(value)),
    { error: 'one of 0, 30, 40, 60' },
  );

/** A user or group kept among those allowed (higher tiers), which a protect would otherwise drop. */
export type AllowedEntity = { readonly user_id: number } | { readonly group_id: number };

const allowedSchema = z.array(z.union([z.strictObject({ user_id: param.integer() }), z.strictObject({ group_id: param.integer() })], { error: '{ user_id } or { group_id }' }));

/**
 * A whole protection, as protect_branch and reprotect_branch create it: the declared levels, plus (for a reprotect)
 * what the forge had that the policy does not declare, so that unprotect-then-protect changes nothing else.
 */
export interface BranchProtection {
  readonly name: string;
  readonly push_access_level: ProtectedBranchAccessLevel;
  readonly merge_access_level: ProtectedBranchAccessLevel;
  readonly unprotect_access_level?: ProtectedBranchAccessLevel;
  readonly allow_force_push: boolean;
  readonly code_owner_approval_required?: boolean;
  readonly allowed_to_push?: readonly AllowedEntity[];
  readonly allowed_to_merge?: readonly AllowedEntity[];
  readonly allowed_to_unprotect?: readonly AllowedEntity[];
}

const protectionSchema = z.object({
  ...projectShape,
  name: param.text(),
  push_access_level: level(),
  merge_access_level: level(),
  unprotect_access_level: level().optional(),
  allow_force_push: param.flag(),
  code_owner_approval_required: param.flag().optional(),
  allowed_to_push: allowedSchema.optional(),
  allowed_to_merge: allowedSchema.optional(),
  allowed_to_unprotect: allowedSchema.optional(),
});

/** A protection without its project: as kept under interruptedStateKey. */
const keptSchema = protectionSchema.omit({ project: true, source: true });

/** Leaves out what is undefined: JSON has no undefined, and the forge's defaults apply to what is not sent. */
function defined(record: Record<string, JsonValue | undefined>): Record<string, JsonValue> {
  return Object.fromEntries(Object.entries(record).filter((entry): entry is [string, JsonValue] => entry[1] !== undefined));
}

export function protectionParams(target: ProjectTarget & { readonly protection: BranchProtection }): ActionParams {
  const { protection } = target;
  return defined({
    ...projectParams(target),
    name: protection.name,
    push_access_level: protection.push_access_level,
    merge_access_level: protection.merge_access_level,
    unprotect_access_level: protection.unprotect_access_level,
    allow_force_push: protection.allow_force_push,
    code_owner_approval_required: protection.code_owner_approval_required,
    allowed_to_push: protection.allowed_to_push?.length ? protection.allowed_to_push : undefined,
    allowed_to_merge: protection.allowed_to_merge?.length ? protection.allowed_to_merge : undefined,
    allowed_to_unprotect: protection.allowed_to_unprotect?.length ? protection.allowed_to_unprotect : undefined,
  });
}

/** protect_branch and reprotect_branch: the project and the body of `POST /projects/:id/protected_branches`. */
export function protectionTarget(params: ActionParams): ProjectTarget & { readonly protection: ProtectBranchParams } {
  const { project, source, ...protection } = readParams(POLICY, protectionSchema, params);
  return { project, source, protection };
}

const branchSchema = z.object({ ...projectShape, name: param.text() });
const codeOwnerSchema = branchSchema.extend({ code_owner_approval_required: param.flag() });

/** unprotect_branch. */
export function branchParams(target: ProjectTarget & { readonly name: string }): ActionParams {
  return { ...projectParams(target), name: target.name };
}

export function branchTarget(params: ActionParams): ProjectTarget & { readonly name: string } {
  return readParams(POLICY, branchSchema, params);
}

/** edit_protected_branch: the only option the forge changes in place (`PATCH`, spec 02 §4). */
export function codeOwnerParams(target: ProjectTarget & { readonly name: string; readonly codeOwnerApprovalRequired: boolean }): ActionParams {
  return { ...projectParams(target), name: target.name, code_owner_approval_required: target.codeOwnerApprovalRequired };
}

export function codeOwnerTarget(params: ActionParams): ProjectTarget & { readonly name: string; readonly codeOwnerApprovalRequired: boolean } {
  const read = readParams(POLICY, codeOwnerSchema, params);
  return { project: read.project, source: read.source, name: read.name, codeOwnerApprovalRequired: read.code_owner_approval_required };
}

const settingsSchema = z.object({
  ...projectShape,
  settings: z.strictObject({
    approvals_before_merge: param.integer().optional(),
    reset_approvals_on_push: param.flag().optional(),
    disable_overriding_approvers_per_merge_request: param.flag().optional(),
    merge_requests_author_approval: param.flag().optional(),
    merge_requests_disable_committers_approval: param.flag().optional(),
    require_password_to_approve: param.flag().optional(),
  }),
});

/** edit_approval_settings: only the settings that differ. */
export function settingsParams(target: ProjectTarget & { readonly settings: EditProjectApprovalSettingsParams }): ActionParams {
  return { ...projectParams(target), settings: defined({ ...target.settings }) };
}

export function settingsTarget(params: ActionParams): ProjectTarget & { readonly settings: EditProjectApprovalSettingsParams } {
  return readParams(POLICY, settingsSchema, params);
}

const ruleBodySchema = z.object({
  name: param.text(),
  approvals_required: param.integer(),
  user_ids: z.array(param.integer()).optional(),
  group_ids: z.array(param.integer()).optional(),
});
const createRuleSchema = z.object({ ...projectShape, rule: ruleBodySchema });
const editRuleSchema = createRuleSchema.extend({ rule_id: param.integer() });
const deleteRuleSchema = z.object({ ...projectShape, rule_id: param.integer(), name: param.text() });

function ruleBody(rule: ProjectApprovalRuleParams): Record<string, JsonValue> {
  return defined({ name: rule.name, approvals_required: rule.approvals_required, user_ids: rule.user_ids, group_ids: rule.group_ids });
}

/** create_approval_rule: the body of `POST /projects/:id/approval_rules`, the declared fields only. */
export function createRuleParams(target: ProjectTarget & { readonly rule: ProjectApprovalRuleParams }): ActionParams {
  return { ...projectParams(target), rule: ruleBody(target.rule) };
}

export function createRuleTarget(params: ActionParams): ProjectTarget & { readonly rule: ProjectApprovalRuleParams } {
  return readParams(POLICY, createRuleSchema, params);
}

/** edit_approval_rule: `PUT .../approval_rules/:rule_id`, which keeps the rule's id (merge requests refer to it). */
export function editRuleParams(target: ProjectTarget & { readonly ruleId: number; readonly rule: ProjectApprovalRuleParams }): ActionParams {
  return { ...projectParams(target), rule_id: target.ruleId, rule: ruleBody(target.rule) };
}

export function editRuleTarget(params: ActionParams): ProjectTarget & { readonly ruleId: number; readonly rule: ProjectApprovalRuleParams } {
  const read = readParams(POLICY, editRuleSchema, params);
  return { project: read.project, source: read.source, ruleId: read.rule_id, rule: read.rule };
}

/** delete_approval_rule; the name is for the audit trail's detail. */
export function deleteRuleParams(target: ProjectTarget & { readonly ruleId: number; readonly name: string }): ActionParams {
  return { ...projectParams(target), rule_id: target.ruleId, name: target.name };
}

export function deleteRuleTarget(params: ActionParams): ProjectTarget & { readonly ruleId: number; readonly name: string } {
  const read = readParams(POLICY, deleteRuleSchema, params);
  return { project: read.project, source: read.source, ruleId: read.rule_id, name: read.name };
}

/** A value of an integration parameter, as declared. */
export type IntegrationValue = string | number | boolean;

/**
 * set_integration: the declared values that are not secrets, and the names of the declared secrets. The forge's PUT
 * replaces the whole record (spec 03 §4), so the action always sends every declared parameter, secrets included.
 */
export interface SetIntegrationTarget extends ProjectTarget {
  readonly slug: IntegrationSlug;
  readonly values: Readonly<Record<string, IntegrationValue>>;
  readonly secrets: readonly string[];
}

const slugSchema = z.enum(INTEGRATION_SLUGS, { error: 'an integration slug of spec 03' });
const setIntegrationSchema = z.object({
  ...projectShape,
  slug: slugSchema,
  values: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]), { error: 'an object of strings, numbers and booleans' }),
  secrets: z.array(param.text()),
});
const integrationSchema = z.object({ ...projectShape, slug: slugSchema });

export function setIntegrationParams(target: SetIntegrationTarget): ActionParams {
  return { ...projectParams(target), slug: target.slug, values: { ...target.values }, secrets: [...target.secrets] };
}

export function setIntegrationTarget(params: ActionParams): SetIntegrationTarget {
  return readParams(POLICY, setIntegrationSchema, params);
}

/** disable_integration: `DELETE /projects/:id/services/<slug>`. */
export function integrationParams(target: ProjectTarget & { readonly slug: IntegrationSlug }): ActionParams {
  return { ...projectParams(target), slug: target.slug };
}

export function integrationTarget(params: ActionParams): ProjectTarget & { readonly slug: IntegrationSlug } {
  return readParams(POLICY, integrationSchema, params);
}

/**
 * The fingerprint of a declared value: sha256 (hex) of the policy's name, the slug, the parameter and the value. The
 * forge leaves secrets out of its answers or masks them, so what this policy last set is known only by this
 * fingerprint, kept in the policy's state; the policy's name is part of it, so two policies setting the same value
 * keep different fingerprints, and none of them is a plain hash of the secret.
 */
export function parameterFingerprint(policy: string, slug: IntegrationSlug, parameter: string, value: IntegrationValue): string {
  return createHash('sha256').update([policy, slug, parameter, JSON.stringify(value)].join('\0')).digest('hex');
}

/** The name of a fingerprint in a project's map: `chat-notifications-a.webhook`. */
export function fingerprintName(slug: IntegrationSlug, parameter: string): string {
  return `${slug}.${parameter}`;
}

/**
 * The protections a reprotect removed and could not put back, by branch name (kept in the policy's state until a
 * protect puts them back): the next pass's protect restores what the policy does not declare from here.
 */
export function interruptedStateKey(projectId: number): string {
  return `interrupted-protections:${projectId}`;
}

/** A protection kept under interruptedStateKey, read back; undefined when it is not one (damaged: declared only). */
export function storedProtection(value: unknown): BranchProtection | undefined {
  const read = keptSchema.safeParse(value);
  return read.success ? read.data : undefined;
}

/**
 * forget_interrupted_protection: the branch whose interrupted-reprotect record is dropped, and the record as decide saw
 * it, so that a newer record (a later reprotect interrupted in the same pass) is not dropped with it.
 */
export interface ForgetTarget extends ProjectTarget {
  readonly name: string;
  readonly kept: BranchProtection;
}

const forgetSchema = z.object({ ...projectShape, name: param.text(), kept: keptSchema });

export function forgetParams(target: ForgetTarget): ActionParams {
  const { project: _project, source: _source, ...kept } = protectionParams({ ...target, protection: target.kept });
  return { ...projectParams(target), name: target.name, kept };
}

export function forgetTarget(params: ActionParams): ForgetTarget {
  return readParams(POLICY, forgetSchema, params);
}

/**
 * Whether two kept protections are the same record: compared as read back (in the schema's key order) and without
 * empty lists, which protectionParams leaves out, so how a record was written does not make it another.
 */
export function sameProtection(a: unknown, b: unknown): boolean {
  const canonical = (value: unknown): string | undefined => {
    const read = keptSchema.safeParse(value);
    if (!read.success) return undefined;
    return JSON.stringify(Object.entries(read.data).filter(([, field]) => !(Array.isArray(field) && field.length === 0)));
  };
  const left = canonical(a);
  return left !== undefined && left === canonical(b);
}

/** The policy state key (namespaced by the engine per policy) holding a project's fingerprints as a JSON object. */
export function fingerprintStateKey(projectId: number): string {
  return `fingerprints:${projectId}`;
}

/**
 * What set_integration sends, built when the action runs: the values from params, the secrets read from the
 * policy's configuration as it is now (the only place they live), and the fingerprint of each parameter sent, to
 * keep in the policy's state once the forge has taken them. Throws when a secret the decision named is no longer
 * declared (the file changed since): nothing is sent, and the next pass decides afresh.
 */
export function integrationRequest(
  config: Pick<ProjectSettingsConfig, 'name' | 'integrations'>,
  target: SetIntegrationTarget,
): { readonly body: Record<string, IntegrationValue>; readonly fingerprints: Record<string, string> } {
  const declared = config.integrations?.[target.slug] as Readonly<Record<string, IntegrationValue | undefined>> | undefined;
  const parameters = integrationParameters(target.slug);
  const body: Record<string, IntegrationValue> = { ...target.values };
  for (const name of target.secrets) {
    const value = declared?.[name];
    if (value === undefined || parameters[name]?.secret !== true) {
      throw new Error(`${POLICY}: ${target.slug}: secret ${name} is no longer declared by policy ${config.name}; the next pass decides again`);
    }
    body[name] = value;
  }
  const fingerprints = Object.fromEntries(
    Object.entries(body)
      // `active` is compared with the forge's own answer, never by fingerprint.
      .filter(([name]) => name !== 'active')
      .map(([name, value]) => [fingerprintName(target.slug, name), parameterFingerprint(config.name, target.slug, name, value)]),
  );
  return { body, fingerprints };
}
