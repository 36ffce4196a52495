export { GitlabClient, type GitlabClientOptions } from './client';
export * from './transport/errors';
export { endpoint, type Endpoint, type GroupId, type ProjectId } from './transport/endpoint';
export type { PageOptions, Paginated } from './transport/pagination';
export type { RetryOptions } from './transport/retry';
export type { ResponseEvent, RetryWait, TokenKind } from './transport/transport';
export { fixedToken, type TokenSource } from './transport/token-source';
export type { JobsResource } from './resources/jobs';
export type { RegistryResource } from './resources/registry';
export type { NamespacesResource } from './resources/namespaces';
export type { ProjectsResource } from './resources/projects';
export type { GroupsResource } from './resources/groups';
export type { VersionResource } from './resources/version';
export type { ProjectHooksResource } from './resources/project-hooks';
export type { ProjectTransferResource } from './resources/project-transfer';
export type { UsersResource } from './resources/users';
export type { SshKeysResource } from './resources/ssh-keys';
export type { DeployKeysResource } from './resources/deploy-keys';
export type { AccessRequestsResource } from './resources/access-requests';
export type { GpgKeysResource } from './resources/gpg-keys';
export type { GroupTransferResource } from './resources/group-transfer';
export type { PersonalAccessTokensResource } from './resources/personal-access-tokens';
export type { AccessTokenSource, ResourceAccessTokensResource } from './resources/access-tokens';
export type { DeployTokensResource } from './resources/deploy-tokens';
export type { CiVariablesResource } from './resources/variables';
export type { MultipartPart } from './transport/multipart';
export type { IntegrationsResource } from './resources/integrations';
export type { ProtectedBranchesResource } from './resources/protected-branches';
export type {
  ExternalApprovalRulesResource,
  MergeRequestApprovalRulesResource,
  MergeRequestApprovalsResource,
  ProjectApprovalRulesResource,
  ProjectApprovalSettingsResource,
} from './resources/approvals';
export type {
  LabelEventSource,
  ResourceLabelEventsResource,
  ResourceWeightEventsResource,
} from './resources/resource-events';
export * from './types';
export { sharedBudgetUsed } from './transport/rate-limit';
