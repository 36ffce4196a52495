import type { PolicyTypeDefinition } from '../config/policy-type';
import type { PolicyRunner } from '../engine/policy';
import { accessRequestsRunner } from './access-requests/access-requests.runner';
import { groupBackupRunner } from './group-backup/group-backup.runner';
import { jobRetryRunner } from './job-retry/job-retry.runner';
import { keyRotationRunner } from './key-rotation/key-rotation.runner';
import { projectSettingsRunner } from './project-settings/project-settings.runner';
import { registryCleanupRunner } from './registry-cleanup/registry-cleanup.runner';

/**
 * The policy types this build runs: one entry per type, each a folder of its own (`policies/<type>/`: schema,
 * observer, pure decide function, runner). This one list feeds the policy file's validation, the engine and the
 * commands that look at policies without the engine (`doctor`): adding a type is a folder and a line here.
 */
export const POLICIES: readonly PolicyRunner[] = [
  jobRetryRunner,
  registryCleanupRunner,
  accessRequestsRunner,
  keyRotationRunner,
  projectSettingsRunner,
  groupBackupRunner,
];

/** The definitions the policy file is validated against. */
export const POLICY_TYPES: readonly PolicyTypeDefinition[] = POLICIES.map((runner) => runner.definition);

/** The runner of a validated policy's type. */
export function policyRunner(type: string): PolicyRunner | undefined {
  return POLICIES.find((runner) => runner.definition.type === type);
}
