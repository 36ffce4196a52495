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
import { registerNamespaceRoutes } from './namespaces';
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
 * Every `/api/v4` route the sandbox serves: the three spec documents, then GitLab's projects, groups, version,
 * project webhooks, project export and import, access and deploy tokens, and CI/CD variables.
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
  registerPersonalAccessTokenRoutes(router);
  registerAccessTokenRoutes(router);
  registerDeployTokenRoutes(router);
  registerVariableRoutes(router);
  return router;
}
