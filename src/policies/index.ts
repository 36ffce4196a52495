import type { PolicyTypeDefinition } from '../config/policy-type';
import { accessRequestsPolicy } from './access-requests/access-requests.schema';
import { jobRetryPolicy } from './job-retry/job-retry.schema';
import { keyRotationPolicy } from './key-rotation/key-rotation.schema';
import { registryCleanupPolicy } from './registry-cleanup/registry-cleanup.schema';

/**
 * The policy types this build knows, for validating the policy file before anything starts. Each type lives in its
 * own folder (`policies/<type>/`) with its schema, observer, pure decide function and module; its module goes into
 * app.module.ts.
 */
export const POLICY_TYPES: readonly PolicyTypeDefinition[] = [jobRetryPolicy, registryCleanupPolicy, accessRequestsPolicy, keyRotationPolicy];
