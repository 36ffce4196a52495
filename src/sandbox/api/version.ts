import { ok } from '../http/context';
import type { Router } from '../http/router';
import { SANDBOX_VERSION } from '../version';
import { currentUser } from './access';

export function registerVersionRoutes(router: Router): void {
  // Any valid token may read it; without one the forge answers 401.
  router.get('/version', (ctx) => {
    currentUser(ctx);
    return ok(SANDBOX_VERSION);
  });
}
