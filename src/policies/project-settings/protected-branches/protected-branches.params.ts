import { z } from 'zod';
import { param, readParams } from '../../../engine/action-params';
import type { ActionParams } from '../../../engine/policy';
import {
  PROTECTED_BRANCH_ACCESS_LEVELS,
  type ProtectBranchParams,
  type ProtectedBranchAccessLevel,
} from '../../../gitlab/types/protected-branches';
import { defined, POLICY, projectParams, projectShape, type ProjectTarget } from '../project-settings.params';

/** What the protected branch actions carry, and the policy's record of interrupted reprotects. */

const level = () =>
  z.union(
    Object.values(PROTECTED_BRANCH_ACCESS_LEVELS).map((value) => z.literal(value)),
    { error: 'one of 0, 30, 40, 60' },
  );

/** A user or group kept among those allowed (higher tiers), which a protect would otherwise drop. */
export type AllowedEntity = { readonly user_id: number } | { readonly group_id: number };

const allowedSchema = z.array(
  z.union([z.strictObject({ user_id: param.integer() }), z.strictObject({ group_id: param.integer() })], {
    error: '{ user_id } or { group_id }',
  }),
);

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

const allowedToSchema = z.array(
  z.union(
    [
      z.strictObject({ user_id: param.integer() }),
      z.strictObject({ group_id: param.integer() }),
      z.strictObject({ access_level: level() }),
    ],
    {
      error: '{ user_id }, { group_id } or { access_level }',
    },
  ),
);

/** The protection as the forge had it before a reprotect, roles, users and groups alike: put back if the protect fails. */
const previousSchema = z.object({
  name: param.text(),
  push_access_level: level().optional(),
  merge_access_level: level().optional(),
  unprotect_access_level: level().optional(),
  allow_force_push: param.flag(),
  code_owner_approval_required: param.flag().optional(),
  allowed_to_push: allowedToSchema.optional(),
  allowed_to_merge: allowedToSchema.optional(),
  allowed_to_unprotect: allowedToSchema.optional(),
});

/** reprotect_branch: a protection, and (decided since this version) the one it replaces. */
export function reprotectionParams(
  target: ProjectTarget & { readonly protection: BranchProtection; readonly was: ProtectBranchParams },
): ActionParams {
  return { ...protectionParams(target), was: defined({ ...target.was }) };
}

export function reprotectionTarget(
  params: ActionParams,
): ProjectTarget & { readonly protection: ProtectBranchParams; readonly was?: ProtectBranchParams } {
  const { was, ...rest } = params;
  const target = protectionTarget(rest);
  return was === undefined
    ? target
    : { ...target, was: readParams(POLICY, z.object({ was: previousSchema }), { was }).was };
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

/** edit_protected_branch: the only option the forge's `PATCH /projects/:id/protected_branches/:name` changes in place. */
export function codeOwnerParams(
  target: ProjectTarget & { readonly name: string; readonly codeOwnerApprovalRequired: boolean },
): ActionParams {
  return {
    ...projectParams(target),
    name: target.name,
    code_owner_approval_required: target.codeOwnerApprovalRequired,
  };
}

export function codeOwnerTarget(
  params: ActionParams,
): ProjectTarget & { readonly name: string; readonly codeOwnerApprovalRequired: boolean } {
  const read = readParams(POLICY, codeOwnerSchema, params);
  return {
    project: read.project,
    source: read.source,
    name: read.name,
    codeOwnerApprovalRequired: read.code_owner_approval_required,
  };
}

/** The policy state key of a project's protections a reprotect removed and could not put back, by branch name. */
export function interruptedStateKey(projectId: number): string {
  return `interrupted-protections:${projectId}`;
}

/** The policy state key listing the projects with such records: a pass finds them also when it no longer selects or sees them. */
export const INTERRUPTED_INDEX_KEY = 'interrupted-protections';

/** A protection kept under interruptedStateKey, read back; undefined when it is not one (damaged: declared only). */
export function storedProtection(value: unknown): BranchProtection | undefined {
  const read = keptSchema.safeParse(value);
  return read.success ? read.data : undefined;
}

/**
 * forget_interrupted_protection: the branch whose record is dropped, and the record as decide saw it, so that a newer
 * record (a later reprotect interrupted in the same pass) is not dropped with it.
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
    return JSON.stringify(
      Object.entries(read.data).filter(([, field]) => !(Array.isArray(field) && field.length === 0)),
    );
  };
  const left = canonical(a);
  return left !== undefined && left === canonical(b);
}
