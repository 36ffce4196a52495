import type { PolicyTypeDefinition } from '../config/policy-type';
import type { PolicyType } from '../engine/policy';
import { accessRequestsType } from './access-requests/access-requests.type';
import { groupBackupType } from './group-backup/group-backup.type';
import { jobRetryType } from './job-retry/job-retry.type';
import { keyRotationType } from './key-rotation/key-rotation.type';
import { projectSettingsType } from './project-settings/project-settings.type';
import { registryCleanupType } from './registry-cleanup/registry-cleanup.type';

/**
 * The policy types this build runs: one entry per type, each a folder of its own (`policies/<type>/`: schema,
 * observer, pure decide function, actions, and the type that joins them). This one list feeds the policy file's
 * validation, the engine and the commands that look at policies without the engine (`doctor`): adding a type is a
 * folder and a line here.
 */
export const POLICIES: readonly PolicyType[] = [
  jobRetryType,
  registryCleanupType,
  accessRequestsType,
  keyRotationType,
  projectSettingsType,
  groupBackupType,
];

/** The definitions the policy file is validated against. */
export const POLICY_TYPES: readonly PolicyTypeDefinition[] = POLICIES.map((policyType) => policyType.definition);

/** The type of a validated policy. */
export function policyType(type: string): PolicyType | undefined {
  return POLICIES.find((candidate) => candidate.definition.type === type);
}
