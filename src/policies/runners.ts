import type { PolicyRunner } from '../engine/policy';
import { accessRequestsRunner } from './access-requests/access-requests.runner';
import { jobRetryRunner } from './job-retry/job-retry.runner';
import { keyRotationRunner } from './key-rotation/key-rotation.runner';
import { registryCleanupRunner } from './registry-cleanup/registry-cleanup.runner';

/**
 * The runners of the policy types this build knows, by type, for commands that look at policies without starting the
 * application (`doctor` checks targets even when Redis does not answer). The daemon registers the same runners through
 * each type's module.
 */
export const POLICY_RUNNERS: ReadonlyMap<string, PolicyRunner> = new Map(
  ([jobRetryRunner, registryCleanupRunner, accessRequestsRunner, keyRotationRunner] as PolicyRunner[]).map((runner) => [runner.type, runner]),
);
