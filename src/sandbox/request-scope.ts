import { z } from 'zod';

/**
 * Which API requests a fault or a hold applies to: a method, and a JavaScript regex tested against the path (no
 * query). Both optional: a rule without them applies to every request.
 */
export const requestScopeShape = {
  method: z.string().optional(),
  /** JavaScript regex tested against the path (no query), e.g. `^/api/v4/projects/[^/]+/jobs$`. */
  path: z
    .string()
    .refine((pattern) => isRegExp(pattern), { message: 'must be a valid regular expression' })
    .optional(),
};

export interface RequestScope {
  readonly method?: string;
  readonly path?: string;
}

export function inScope(scope: RequestScope, method: string, path: string): boolean {
  if (scope.method !== undefined && scope.method.toUpperCase() !== method.toUpperCase()) return false;
  return scope.path === undefined || new RegExp(scope.path).test(path);
}

export function isRegExp(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}
