import type { PolicyTypeDefinition } from '../config/policy-type';

/**
 * The policy types this build knows. Each type lives in its own folder (`policies/<type>/`) with its schema,
 * observer, pure decide function and module, and is added here and in app.module.ts.
 */
export const POLICY_TYPES: readonly PolicyTypeDefinition[] = [];
