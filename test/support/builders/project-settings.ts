import type { ProtectedBranchAccess, ProtectedBranchAccessLevel } from '../../../src/gitlab/types/protected-branches';
import type { ObservedApprovalRule } from '../../../src/policies/project-settings/approvals/approvals.decide';
import type { ObservedIntegration } from '../../../src/policies/project-settings/integrations/integrations.decide';
import type {
  ProjectSettingsProjectSnapshot,
  ProjectSettingsSnapshot,
} from '../../../src/policies/project-settings/project-settings.decide';
import type { ObservedProtectedBranch } from '../../../src/policies/project-settings/protected-branches/protected-branches.decide';
import {
  type ProjectSettingsConfig,
  projectSettingsPolicy,
} from '../../../src/policies/project-settings/project-settings.schema';
import { BASE_NOW } from '../world-builders';

/**
 * Builders for project_settings tests: small, readable defaults, with only what a test is about spelled out. The
 * config goes through the real schema, so defaults and conversions (levels by name) are a policy file's.
 */

/** The clock of the tests: the sandbox worlds' start, 2025-06-02 12:00 UTC. */
export const NOW = new Date(BASE_NOW);

/** A project_settings policy as written in YAML, parsed by the real schema: acme/api, `main` protected. */
export function aPolicy(fields: Record<string, unknown> = {}): ProjectSettingsConfig {
  return projectSettingsPolicy.schema.parse({
    name: 'baseline',
    type: 'project_settings',
    projects: ['acme/api'],
    interval: '30m',
    protected_branches: [{ name: 'main', push_access_level: 'maintainer', merge_access_level: 'developer' }],
    ...fields,
  });
}

const DESCRIPTIONS: Record<number, string> = {
  0: 'No one',
  30: 'Developers + Maintainers',
  40: 'Maintainers',
  60: 'Admins',
};

/** A role entry of an access list, described as the forge describes it. */
export function aRole(level: ProtectedBranchAccessLevel): ProtectedBranchAccess {
  return { access_level: level, access_level_description: DESCRIPTIONS[level], user_id: null, group_id: null };
}

/** A user entry of an access list (higher tiers): no role level. */
export function aUserEntry(userId: number): ProtectedBranchAccess {
  return { access_level: null, access_level_description: `user ${userId}`, user_id: userId, group_id: null };
}

export function aGroupEntry(groupId: number): ProtectedBranchAccess {
  return { access_level: null, access_level_description: `group ${groupId}`, user_id: null, group_id: groupId };
}

/**
 * A protected branch as the forge lists it: `main`, push maintainers, merge developers, unprotect maintainers, no force
 * push, code owner approval off (a higher tier's answer; pass `code_owner_approval_required: undefined` for a lower).
 */
export function aProtectedBranch(fields: Partial<ObservedProtectedBranch> = {}): ObservedProtectedBranch {
  return {
    name: 'main',
    push_access_levels: [aRole(40)],
    merge_access_levels: [aRole(30)],
    unprotect_access_levels: [aRole(40)],
    allow_force_push: false,
    code_owner_approval_required: false,
    ...fields,
  };
}

/** A user-defined approval rule `security`, id 7, one approval, no users or groups. */
export function anApprovalRule(fields: Partial<ObservedApprovalRule> = {}): ObservedApprovalRule {
  return {
    id: 7,
    name: 'security',
    rule_type: 'regular',
    approvals_required: 1,
    users: [],
    groups: [],
    contains_hidden_groups: false,
    ...fields,
  };
}

export function anIntegration(properties: Record<string, unknown> = {}, active = true): ObservedIntegration {
  return { active, properties };
}

/** acme/api (id 42) as observed, with `main` protected as aPolicy declares it and nothing else. */
export function aProjectSnapshot(fields: Partial<ProjectSettingsProjectSnapshot> = {}): ProjectSettingsProjectSnapshot {
  return { project: 'acme/api', projectId: 42, protectedBranches: [aProtectedBranch()], fingerprints: {}, ...fields };
}

export function aSnapshot(...projects: ProjectSettingsProjectSnapshot[]): ProjectSettingsSnapshot {
  return { projects: projects.length > 0 ? projects : [aProjectSnapshot()] };
}
