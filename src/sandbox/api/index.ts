import { Router } from '../http/router';
import { registerAccessRequestRoutes } from './access-requests';
import { registerAccessTokenRoutes } from './access-tokens';
import { registerApprovalRoutes } from './approvals';
import { registerDeployKeyRoutes } from './deploy-keys';
import { registerDeployTokenRoutes } from './deploy-tokens';
import { registerGpgKeyRoutes } from './gpg-keys';
import { registerGroupTransferRoutes } from './group-transfer';
import { registerGroupRoutes } from './groups';
import { registerHookRoutes } from './hooks';
import { registerIntegrationRoutes } from './integrations';
import { registerJobRoutes } from './jobs';
import { registerMemberRoutes } from './members';
import { registerNamespaceRoutes } from './namespaces';
import { registerProjectEditRoutes } from './project-edits';
import { registerPersonalAccessTokenRoutes } from './personal-access-tokens';
import { registerProjectTransferRoutes } from './project-transfer';
import { registerProjectRoutes } from './projects';
import { registerProtectedBranchRoutes } from './protected-branches';
import { registerRegistryRoutes } from './registry';
import { registerResourceEventRoutes } from './resource-events';
import { registerSshKeyRoutes } from './ssh-keys';
import { registerUserWriteRoutes } from './user-writes';
import { registerUserRoutes } from './users';
import { registerVariableRoutes } from './variables';
import { registerVersionRoutes } from './version';

/**
 * Every `/api/v4` route the sandbox serves: the endpoint table of docs/api-client.md, then GitLab's projects, groups,
 * version, project webhooks, project export and import, access and deploy tokens, CI/CD variables, and the edits a
 * person makes: renaming and moving projects, editing members (blocking users is with the user writes).
 */
export function apiRouter(): Router {
  const router = new Router();
  registerJobRoutes(router);
  registerRegistryRoutes(router);
  registerNamespaceRoutes(router);
  registerUserRoutes(router);
  registerUserWriteRoutes(router);
  registerSshKeyRoutes(router);
  registerDeployKeyRoutes(router);
  registerAccessRequestRoutes(router);
  registerGpgKeyRoutes(router);
  registerGroupTransferRoutes(router);
  registerIntegrationRoutes(router);
  registerProtectedBranchRoutes(router);
  registerApprovalRoutes(router);
  registerResourceEventRoutes(router);
  registerProjectRoutes(router);
  registerGroupRoutes(router);
  registerVersionRoutes(router);
  registerHookRoutes(router);
  registerProjectTransferRoutes(router);
  registerProjectEditRoutes(router);
  registerMemberRoutes(router);
  registerPersonalAccessTokenRoutes(router);
  registerAccessTokenRoutes(router);
  registerDeployTokenRoutes(router);
  registerVariableRoutes(router);
  return router;
}
