import type { Dispatcher } from 'undici';
import type { SharedBudgetRedis } from './transport/rate-limit';
import { AccessRequestsResource } from './resources/access-requests';
import { ResourceAccessTokensResource } from './resources/access-tokens';
import {
  ExternalApprovalRulesResource,
  MergeRequestApprovalRulesResource,
  MergeRequestApprovalsResource,
  ProjectApprovalRulesResource,
  ProjectApprovalSettingsResource,
} from './resources/approvals';
import { DeployKeysResource } from './resources/deploy-keys';
import { DeployTokensResource } from './resources/deploy-tokens';
import { GpgKeysResource } from './resources/gpg-keys';
import { GroupTransferResource } from './resources/group-transfer';
import { GroupsResource } from './resources/groups';
import { IntegrationsResource } from './resources/integrations';
import { JobsResource } from './resources/jobs';
import { NamespacesResource } from './resources/namespaces';
import { PersonalAccessTokensResource } from './resources/personal-access-tokens';
import { ProjectHooksResource } from './resources/project-hooks';
import { ProjectTransferResource } from './resources/project-transfer';
import { ProjectsResource } from './resources/projects';
import { ProtectedBranchesResource } from './resources/protected-branches';
import { RegistryResource } from './resources/registry';
import { ResourceLabelEventsResource, ResourceWeightEventsResource } from './resources/resource-events';
import { SshKeysResource } from './resources/ssh-keys';
import { UsersResource } from './resources/users';
import { CiVariablesResource } from './resources/variables';
import { VersionResource } from './resources/version';
import { DEFAULT_RATE_LIMIT_OPTIONS, RateLimiter } from './transport/rate-limit';
import { type Clock, systemClock } from '../clock';
import { DEFAULT_RETRY_OPTIONS, type RetryOptions } from './transport/retry';
import { fixedToken, type TokenSource } from './transport/token-source';
import { type ResponseEvent, type RetryWait, type TokenKind, Transport } from './transport/transport';

export interface GitlabClientOptions {
  /** The forge's base address, e.g. `https://gitlab.example.com` (a trailing `/api/v4` is accepted). */
  url: string;
  /**
   * Sent only in the `PRIVATE-TOKEN` (or `JOB-TOKEN`) header, never in a URL. A `TokenSource` is read at every request
   * (a token rotated while the process runs) and asked again after a 401.
   */
  token: string | TokenSource;
  /** `job`: the token is a CI job token and every request carries `JOB-TOKEN`. Default `private`. */
  tokenKind?: TokenKind;
  /** Time to response headers, and the longest silence while a body streams. Default 30 s. */
  timeoutMs?: number;
  /** Default 10 s. */
  connectTimeoutMs?: number;
  /** Requests in flight per process. Default 8. */
  concurrency?: number;
  /** Shared by all replicas using the same Redis and prefix; 0 = unlimited. Default 600. */
  maxRequestsPerMinute?: number;
  /** Minimum spacing between writes of this process. Default: the budget's pace, at most 250 ms (see writeSpacingMs). */
  minWriteIntervalMs?: number;
  /** Holds the shared request budget; without it the budget is per process. */
  redis?: SharedBudgetRedis;
  /** Default `forgewarden`. */
  redisPrefix?: string;
  retry?: Partial<RetryOptions>;
  onResponse?: (event: ResponseEvent) => void;
  /** Before each wait between attempts of a request (a 429, a 5xx, a failed connection), so a caller can say why it waits. */
  onRetry?: (event: RetryWait) => void;
  /** Where the client says what it had to work around (the shared budget counted per process); default: a process warning. */
  warn?: (message: string) => void;
  /** For tests: an undici dispatcher (e.g. MockAgent) instead of the client's own connection pool. */
  dispatcher?: Dispatcher;
  /** For tests: a deterministic clock, sleep and random source. */
  clock?: Clock;
  /** For tests: the budget window length. Default one minute. */
  rateLimitWindowMs?: number;
}

/**
 * The typed client of the forge's `/api/v4` (docs/api-client.md): one object exposing every resource. `projects`,
 * `groups`, `version`, `projectHooks`, `projectTransfer`, the access and deploy tokens and the CI/CD variables follow
 * GitLab's public API docs, which the specification does not cover.
 */
export class GitlabClient {
  readonly jobs: JobsResource;
  readonly registry: RegistryResource;
  readonly namespaces: NamespacesResource;
  readonly users: UsersResource;
  readonly sshKeys: SshKeysResource;
  readonly deployKeys: DeployKeysResource;
  readonly groupAccessRequests: AccessRequestsResource<'groups'>;
  readonly projectAccessRequests: AccessRequestsResource<'projects'>;
  readonly gpgKeys: GpgKeysResource;
  readonly groupTransfer: GroupTransferResource;
  readonly integrations: IntegrationsResource;
  readonly protectedBranches: ProtectedBranchesResource;
  readonly projectApprovalSettings: ProjectApprovalSettingsResource;
  readonly projectApprovalRules: ProjectApprovalRulesResource;
  readonly externalApprovalRules: ExternalApprovalRulesResource;
  readonly mergeRequestApprovals: MergeRequestApprovalsResource;
  readonly mergeRequestApprovalRules: MergeRequestApprovalRulesResource;
  readonly issueLabelEvents: ResourceLabelEventsResource<'issues'>;
  readonly mergeRequestLabelEvents: ResourceLabelEventsResource<'merge_requests'>;
  readonly epicLabelEvents: ResourceLabelEventsResource<'epics'>;
  readonly issueWeightEvents: ResourceWeightEventsResource;
  readonly projects: ProjectsResource;
  readonly groups: GroupsResource;
  readonly version: VersionResource;
  readonly projectHooks: ProjectHooksResource;
  readonly projectTransfer: ProjectTransferResource;
  readonly personalAccessTokens: PersonalAccessTokensResource;
  readonly projectAccessTokens: ResourceAccessTokensResource<'projects'>;
  readonly groupAccessTokens: ResourceAccessTokensResource<'groups'>;
  readonly projectDeployTokens: DeployTokensResource<'projects'>;
  readonly groupDeployTokens: DeployTokensResource<'groups'>;
  readonly projectVariables: CiVariablesResource<'projects'>;
  readonly groupVariables: CiVariablesResource<'groups'>;
  readonly limiter: RateLimiter;
  private readonly transport: Transport;

  constructor(options: GitlabClientOptions) {
    const clock = options.clock ?? systemClock;
    const concurrency = options.concurrency ?? DEFAULT_RATE_LIMIT_OPTIONS.concurrency;
    this.limiter = new RateLimiter(
      {
        maxRequestsPerMinute: options.maxRequestsPerMinute ?? DEFAULT_RATE_LIMIT_OPTIONS.maxRequestsPerMinute,
        concurrency,
        ...(options.minWriteIntervalMs !== undefined ? { minWriteIntervalMs: options.minWriteIntervalMs } : {}),
        windowMs: options.rateLimitWindowMs ?? DEFAULT_RATE_LIMIT_OPTIONS.windowMs,
        redis: options.redis,
        redisPrefix: options.redisPrefix ?? DEFAULT_RATE_LIMIT_OPTIONS.redisPrefix,
        warn: options.warn ?? DEFAULT_RATE_LIMIT_OPTIONS.warn,
      },
      clock,
    );
    this.transport = new Transport({
      url: options.url,
      token: typeof options.token === 'string' ? fixedToken(options.token) : options.token,
      tokenKind: options.tokenKind ?? 'private',
      timeoutMs: options.timeoutMs ?? 30_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      concurrency,
      retry: { ...DEFAULT_RETRY_OPTIONS, ...options.retry },
      limiter: this.limiter,
      clock,
      dispatcher: options.dispatcher,
      onResponse: options.onResponse,
      onRetry: options.onRetry,
    });
    this.jobs = new JobsResource(this.transport);
    this.registry = new RegistryResource(this.transport);
    this.namespaces = new NamespacesResource(this.transport);
    this.users = new UsersResource(this.transport);
    this.sshKeys = new SshKeysResource(this.transport);
    this.deployKeys = new DeployKeysResource(this.transport);
    this.groupAccessRequests = new AccessRequestsResource(this.transport, 'groups');
    this.projectAccessRequests = new AccessRequestsResource(this.transport, 'projects');
    this.gpgKeys = new GpgKeysResource(this.transport);
    this.groupTransfer = new GroupTransferResource(this.transport);
    this.integrations = new IntegrationsResource(this.transport);
    this.protectedBranches = new ProtectedBranchesResource(this.transport);
    this.projectApprovalSettings = new ProjectApprovalSettingsResource(this.transport);
    this.projectApprovalRules = new ProjectApprovalRulesResource(this.transport);
    this.externalApprovalRules = new ExternalApprovalRulesResource(this.transport);
    this.mergeRequestApprovals = new MergeRequestApprovalsResource(this.transport);
    this.mergeRequestApprovalRules = new MergeRequestApprovalRulesResource(this.transport);
    this.issueLabelEvents = new ResourceLabelEventsResource(this.transport, 'issues');
    this.mergeRequestLabelEvents = new ResourceLabelEventsResource(this.transport, 'merge_requests');
    this.epicLabelEvents = new ResourceLabelEventsResource(this.transport, 'epics');
    this.issueWeightEvents = new ResourceWeightEventsResource(this.transport);
    this.projects = new ProjectsResource(this.transport);
    this.groups = new GroupsResource(this.transport);
    this.version = new VersionResource(this.transport);
    this.projectHooks = new ProjectHooksResource(this.transport);
    this.projectTransfer = new ProjectTransferResource(this.transport);
    this.personalAccessTokens = new PersonalAccessTokensResource(this.transport);
    this.projectAccessTokens = new ResourceAccessTokensResource(this.transport, 'projects');
    this.groupAccessTokens = new ResourceAccessTokensResource(this.transport, 'groups');
    this.projectDeployTokens = new DeployTokensResource(this.transport, 'projects');
    this.groupDeployTokens = new DeployTokensResource(this.transport, 'groups');
    this.projectVariables = new CiVariablesResource(this.transport, 'projects');
    this.groupVariables = new CiVariablesResource(this.transport, 'groups');
  }

  /** Closes the connection pool the client opened; the Redis connection belongs to the caller. */
  async close(): Promise<void> {
    await this.transport.close();
  }
}
