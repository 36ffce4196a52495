import type { World } from '../../src/sandbox/world';
import { acmeGroup, apiProject, baseWorld, webProject } from './world-builders';

/**
 * A world with drift in every policy type, and a policy of each type that finds it: what the round trip of `record`
 * and `test` is checked on. Its secrets (a hook's token, a job's token, an integration's webhook, a token in a log)
 * must never reach a recorded world.
 */

const HOOK_TOKEN = 'hook-secret-token-5be1c0';
const JOB_TOKEN = 'glcbt-64_round-trip-job-token-0c9d';
const WEBHOOK = 'https://chat.example.test/hooks/T0-round-trip-secret-8f2e';
const LOGGED_TOKEN = 'glpat-roundTripLoggedToken9a7b';

export const ROUND_TRIP_SECRETS: readonly string[] = [HOOK_TOKEN, JOB_TOKEN, WEBHOOK, LOGGED_TOKEN];

const ROOT_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEMDoGfNunr1WFekht/2O6d5DyESx4rYcytd626LIDB0 root@laptop';
const CI_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPO/QQFVqRDh0EFZQ+4XsJcp6SsKZJuxbQYBSa5fFdAh ci-deploy';
const RELEASE_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINiQd6JEAitN/txCVP4GFFSJsNjIGAUlHmumD/QtwXAv release-deploy';

export function roundTripWorld(): World {
  const base = baseWorld();
  return {
    ...base,
    users: [
      ...(base.users ?? []).map((user) =>
        user.username === 'root'
          ? {
              ...user,
              two_factor: true,
              ssh_keys: [
                { id: 61, title: 'ci-deploy', key: CI_KEY, created_at: 'now-80d', expires_at: 'now+10d' },
                { id: 62, title: 'laptop', key: ROOT_KEY },
              ],
            }
          : user,
      ),
      {
        id: 5,
        username: 'carol',
        name: 'Carol Staff',
        email: 'carol@acme.test',
        two_factor: true,
        created_at: 'now-20d',
      },
      { id: 6, username: 'spam-bot-42', email: 'prizes@spam.example', created_at: 'now-1d' },
      { id: 7, username: 'dave', email: 'dave@contractor.example', external: true, created_at: 'now-15d' },
    ],
    groups: [
      acmeGroup({
        access_requests: [
          { user: 'carol', requested_at: 'now-2d' },
          { user: 'spam-bot-42', requested_at: 'now-3h' },
        ],
      }),
    ],
    projects: [
      apiProject({
        members: [{ user: 'alice', access_level: 'developer' }],
        hooks: [{ url: 'https://hooks.example.test/ci', token: HOOK_TOKEN, job_events: true }],
        protected_branches: [{ id: 30, name: 'main', push_access_level: 'developer', merge_access_level: 'developer' }],
        approval_settings: { reset_approvals_on_push: true, merge_requests_author_approval: true },
        approval_rules: [{ id: 40, name: 'qa', approvals_required: 1, users: ['alice'], protected_branches: ['main'] }],
        integrations: [
          { id: 9, slug: 'chat-collab-a', properties: { webhook: WEBHOOK, notify_only_broken_pipelines: false } },
        ],
        pipelines: [
          {
            id: 100,
            ref: 'main',
            user: 'alice',
            created_at: 'now-30m',
            jobs: [
              { id: 1001, name: 'build', stage: 'build', status: 'success', log: 'Build OK\n' },
              {
                id: 1002,
                name: 'test',
                stage: 'test',
                status: 'failed',
                failure_reason: 'script_failure',
                log: `using ${LOGGED_TOKEN}\nError: read ECONNRESET: connection reset by peer\n`,
              },
              { id: 1003, name: 'lint', stage: 'test', status: 'failed', log: 'eslint: 3 problems\n' },
              { id: 1004, name: 'deploy', stage: 'deploy', status: 'running', token: JOB_TOKEN },
            ],
          },
          {
            id: 99,
            ref: 'main',
            created_at: 'now-1d',
            jobs: [
              {
                id: 990,
                name: 'test',
                stage: 'test',
                status: 'failed',
                retried: true,
                log: 'connection reset by peer\n',
              },
              { id: 991, name: 'test', stage: 'test', status: 'failed', log: 'connection reset by peer\n' },
            ],
          },
        ],
        registry: [
          {
            id: 1,
            name: '',
            created_at: 'now-200d',
            tags: [
              { name: 'latest', created_at: 'now-1h' },
              { name: 'build-1', created_at: 'now-30d' },
              { name: 'build-2', created_at: 'now-20d' },
              { name: 'build-3', created_at: 'now-2d' },
              { name: 'build-4', created_at: null },
              { name: 'v1.0.0', created_at: 'now-60d' },
            ],
          },
        ],
      }),
      webProject({
        access_requests: [{ user: 'dave', requested_at: 'now-5d' }],
        pipelines: [
          {
            id: 200,
            ref: 'main',
            created_at: 'now-2h',
            jobs: [
              { id: 2001, name: 'e2e', stage: 'test', status: 'failed', log: 'connect ETIMEDOUT 10.0.0.12:443\n' },
            ],
          },
        ],
        registry: [
          {
            id: 3,
            name: 'frontend',
            created_at: 'now-150d',
            tags: [
              { name: 'build-9', created_at: 'now-40d' },
              { name: 'build-10', created_at: 'now-1d' },
            ],
          },
        ],
      }),
    ],
    deploy_keys: [
      {
        id: 50,
        title: 'release-deploy',
        key: RELEASE_KEY,
        created_at: 'now-120d',
        projects: [
          { project: 'acme/api', can_push: true },
          { project: 'acme/web', can_push: false },
        ],
      },
    ],
  };
}

/** One policy of each type, as lines of a policy file's `policies:`; `folders` are key_rotation's and group_backup's. */
export function roundTripPolicies(folders: { readonly secrets_dir: string; readonly destination: string }): string[] {
  return [
    '  - name: retry',
    '    type: job_retry',
    '    projects: ["acme/*"]',
    '    interval: 1m',
    '    lookback: 2d',
    '    match: { failure_log: ["(?i)connection reset", "ETIMEDOUT"] }',
    '    max_retries: 2',
    '  - name: cleanup',
    '    type: registry_cleanup',
    '    schedule: "0 3 * * *"',
    '    groups: [acme]',
    '    name_regex_delete: "build-.*"',
    '    keep_n: 1',
    '    older_than: 7d',
    '  - name: access',
    '    type: access_requests',
    '    interval: 5m',
    '    groups: [acme]',
    '    projects: [acme/web]',
    '    rules:',
    '      - approve: developer',
    '        when: { email_domains: [acme.test], two_factor: true, external: false }',
    '      - deny: true',
    '        when: { usernames: ["^spam"] }',
    '    otherwise: leave',
    '  - name: keys',
    '    type: key_rotation',
    '    interval: 1h',
    `    secrets_dir: ${JSON.stringify(folders.secrets_dir)}`,
    '    ssh_keys:',
    '      - { user: self, titles: ["^ci"], rotate_before: 14d, lifetime: 90d, grace: 1d }',
    '    deploy_keys:',
    '      - { projects: [acme/api, acme/web], titles: ["^release"], rotate_after: 90d, grace: 1d }',
    '  - name: settings',
    '    type: project_settings',
    '    projects: [acme/api]',
    '    interval: 30m',
    '    protected_branches:',
    '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
    '    approvals:',
    '      settings: { reset_approvals_on_push: false, merge_requests_author_approval: false }',
    '      rules: [{ name: qa, approvals_required: 2, user_ids: [3] }]',
    '    integrations:',
    `      chat-collab-a: { webhook: ${JSON.stringify(WEBHOOK)}, notify_only_broken_pipelines: true }`,
    '  - name: backup',
    '    type: group_backup',
    '    groups: [acme]',
    '    schedule: "0 2 * * *"',
    `    destination: ${JSON.stringify(folders.destination)}`,
  ];
}
