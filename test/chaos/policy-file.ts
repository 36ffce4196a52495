import { SETTINGS } from './project-settings';
import { ACCESS, GROUPS, PROJECTS, REGISTRY, TITLES, TOKENS } from './world';

/** Every polling policy's interval: the humans scenario's judges allow the daemon one such pass (and slack) to repair. */
export const PASS_INTERVAL_MS = 1_000;

/** Policy names, also used as the table's `policy` column. */
export const POLICIES = {
  jobRetry: 'chaos-job-retry',
  registry: 'chaos-registry-cleanup',
  access: 'chaos-access-requests',
  keys: 'chaos-key-rotation',
  settings: 'chaos-project-settings',
  tokens: 'chaos-token-rotation',
} as const;

/**
 * The daemons' policy file. Intervals are 1s so a pass that a fault broke is tried again at once; the request budget
 * is far above what the suite sends, so the shared budget never slows a run (the suite tests faults, not throttling).
 * The timeout is short because a reset or a lost answer must not hold a pass for the default 30 s.
 * The forge URL, token and Redis URL come from the environment, as they do in production; a Sentinel topology is
 * named in the file (its sentinels' ports are the suite's to choose).
 */
export interface PolicyFileOptions {
  /** The humans scenario backs up one group too. */
  backup?: { destination: string; group: string; schedule: string; keepLast: number; policy: string };
  /**
   * `per_tag` in the humans scenario: each tag deletion is the daemon's own decision, re-read against the tags present
   * (bulk deletions are evaluated by the forge when they run, so a person deleting tags cannot make them wrong).
   */
  registryMode?: 'bulk' | 'per_tag';
  /**
   * The Redis section's topology: one server from REDIS_URL (the default), or a primary the sentinels at
   * `sentinels` ("host:port") monitor under `masterName` (the failover scenario). With sentinels the claims wait for
   * the default number of replicas (one): that default is part of what the scenario tests.
   */
  redis?: { sentinels: readonly string[]; masterName: string };
  /**
   * Serve /metrics on the port in FORGEWARDEN_CHAOS_HTTP_PORT, which each daemon gets its own of, so the suite can read
   * their counters at the end (the failover scenario). Without it no HTTP server runs.
   */
  metrics?: boolean;
  /**
   * key_rotation's on_rotate (the humans scenario): a command that reports each run, with the forge's address passed
   * through on_rotate_env, so the judge can compare what the hook was handed with what the forge holds at that moment.
   */
  onRotate?: string;
  /**
   * The storm scenario: job_retry's storm control at thresholds the world's failures reach (its defaults are for a
   * forge, not for a world of a few dozen jobs), counted over a day of the suite's fast clock, probing every 10 minutes
   * of it at first.
   */
  storm?: boolean;
}

export function policyFile(secretsDir: string, options: PolicyFileOptions = {}): string {
  const { backup, registryMode = 'bulk', redis, metrics = false, onRotate, storm = false } = options;
  const interval = `${PASS_INTERVAL_MS / 1000}s`;
  const list = (items: readonly string[]): string => `[${items.map((i) => JSON.stringify(i)).join(', ')}]`;
  const topology = redis
    ? `sentinels: ${list(redis.sentinels)}\n  master_name: ${JSON.stringify(redis.masterName)}`
    : 'url: ${REDIS_URL}';
  return `version: 1
gitlab:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
  timeout: 3s
  connect_timeout: 2s
  max_requests_per_minute: 100000
  concurrency: 8
redis:
  ${topology}
  prefix: chaos
  connect_timeout: 5s
dry_run: false
http:
  port: ${metrics ? '${FORGEWARDEN_CHAOS_HTTP_PORT}' : '0'}
shutdown_timeout: 5s
policies:
  - name: ${POLICIES.jobRetry}
    type: job_retry
    projects: ${list(PROJECTS)}
    interval: ${interval}
    lookback: 7d
    match:
      stages: [test]
      failure_log: ["(?i)connection reset", "ETIMEDOUT"]
    max_retries: 2
    max_actions_per_run: 100
${storm ? '    storm: { failures: 8, projects: 2, within: 1d, probe_backoff: 10m, probe_backoff_max: 2h, calm_after: 2d }\n' : ''}  - name: ${POLICIES.registry}
    type: registry_cleanup
    schedule: "* * * * *"
    mode: ${registryMode}
    projects: ${list(PROJECTS)}
    name_regex_delete: ${JSON.stringify(REGISTRY.nameRegexDelete)}
    name_regex_keep: ${JSON.stringify(REGISTRY.nameRegexKeep)}
    keep_n: ${REGISTRY.keepN}
    older_than: ${REGISTRY.olderThan}
  - name: ${POLICIES.access}
    type: access_requests
    interval: ${interval}
    groups: ${list(GROUPS)}
    projects: ["acme/web"]
    rules:
      - approve: maintainer
        when: { usernames: [${JSON.stringify(ACCESS.leadPattern)}], email_domains: [${ACCESS.staffDomain}], two_factor: true }
      - approve: developer
        when: { email_domains: [${ACCESS.staffDomain}], two_factor: true, external: false }
      - approve: reporter
        when: { email_domains: [${ACCESS.partnerDomain}], two_factor: true }
      - deny: true
        when: { usernames: [${JSON.stringify(ACCESS.spamPattern)}] }
    otherwise: leave
    deny_pending_after: ${ACCESS.denyPendingAfter}
  - name: ${POLICIES.keys}
    type: key_rotation
    interval: ${interval}
    secrets_dir: ${JSON.stringify(secretsDir)}
    ssh_keys:
      - { user: self, titles: [${JSON.stringify(TITLES.ssh)}], rotate_before: 14d, lifetime: 90d, grace: 1h }
    deploy_keys:
      - { projects: ${list(PROJECTS)}, titles: [${JSON.stringify(TITLES.deploy)}], rotate_after: 90d, grace: 1h }
${onRotate ? `    on_rotate: ${JSON.stringify(onRotate)}\n    on_rotate_env: [GITLAB_URL]\n` : ''}  - name: ${POLICIES.settings}
    type: project_settings
    projects: ${list(SETTINGS.projects)}
    interval: ${interval}
    protected_branches:
      - { name: main, push_access_level: maintainer, merge_access_level: developer }
      - { name: "release/*", push_access_level: no_access, merge_access_level: maintainer }
    approvals:
      settings: { reset_approvals_on_push: false, merge_requests_author_approval: false }
      rules:
        - { name: security, approvals_required: 2, group_ids: [${SETTINGS.securityGroupId}] }
    integrations:
      chat-notifications-a:
        webhook: ${JSON.stringify(SETTINGS.webhook)}
        notify_only_broken_pipelines: true
    prune: true
${tokenPolicy(secretsDir)}${backup ? backupPolicy(backup) : ''}`;
}

/**
 * Tokens (world.ts, TOKEN_FAMILIES): project access tokens rotated on one project and overlapped on another, a group
 * access token rotated, a deploy token overlapped, each delivered to a variable of its holder. The grace is an hour, so
 * the suite's hour steps end it.
 */
function tokenPolicy(secretsDir: string): string {
  const deliver = (key: string): string => `deliver: [{ variable: { key: ${key} } }]`;
  return `  - name: ${POLICIES.tokens}
    type: key_rotation
    interval: 1s
    secrets_dir: ${JSON.stringify(secretsDir)}
    project_access_tokens:
      - { projects: ["acme/api", "acme/worker"], names: [${JSON.stringify(TOKENS.accessNames)}], before_expiry: 14d, lifetime: 90d, strategy: rotate, ${deliver('DEPLOY_TOKEN')} }
      - { projects: ["acme/web"], names: [${JSON.stringify(TOKENS.accessNames)}], before_expiry: 14d, lifetime: 90d, strategy: overlap, grace: 1h, ${deliver('DEPLOY_TOKEN')} }
    group_access_tokens:
      - { groups: [acme], names: [${JSON.stringify(TOKENS.groupNames)}], before_expiry: 14d, lifetime: 30d, strategy: rotate, ${deliver('GROUP_CI_TOKEN')} }
    deploy_tokens:
      - { projects: [acme/api], names: [${JSON.stringify(TOKENS.deployNames)}], before_expiry: 14d, lifetime: 90d, grace: 1h, ${deliver('REGISTRY_PASSWORD')} }
`;
}

/** The humans scenario's backups: hourly (an hour step of the suite's clock), keeping the last two. */
function backupPolicy(backup: {
  destination: string;
  group: string;
  schedule: string;
  keepLast: number;
  policy: string;
}): string {
  return `  - name: ${backup.policy}
    type: group_backup
    groups: [${JSON.stringify(backup.group)}]
    schedule: ${JSON.stringify(backup.schedule)}
    destination: ${JSON.stringify(backup.destination)}
    keep: { last: ${backup.keepLast} }
    download_interval: 1s
    # The suite's clock moves an hour at a time: an export must outlast a step.
    timeout: 3h
`;
}
