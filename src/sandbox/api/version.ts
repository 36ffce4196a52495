import { ok } from '../http/context';
import type { Router } from '../http/router';
import { currentUser } from './access';

/**
 * What `GET /version` answers (GitLab's public API docs, Version API; beyond the forge's API specification): a
 * release number tools can compare, and a revision that says it is the sandbox.
 */
export const SANDBOX_VERSION = { version: '17.5.0', revision: 'sandbox' } as const;

export function registerVersionRoutes(router: Router): void {
  // Any valid token may read it; without one the forge answers 401.
  router.get('/version', (ctx) => {
    currentUser(ctx);
    return ok(SANDBOX_VERSION);
  });
}
