import { generateOpenSshKeyPair } from '../../src/policies/key-rotation/openssh';
import { selectTagsToDelete } from '../../src/sandbox/bulk-delete';
import { type World } from '../../src/sandbox';
import { SETTINGS_ITEMS, type SettingsItem, WORLD_PROTECTIONS } from './project-settings';
import {
  ADMIN_TOKEN,
  type JobInput,
  type PipelineInput,
  type ProjectInput,
  type TagInput,
  type UserInput,
} from '../support/world-builders';

/**
 * The chaos suite's world, built in code: enough work for every policy that faults hit it many times, and for each
 * policy some records that must be left alone, so an action done twice or on the wrong record shows. Alongside the
 * world, what a correct daemon does to it (`Design`): the suite checks the fault-free reference run against it, so a
 * reference that went wrong is noticed instead of becoming the yardstick.
 */

export const CHAOS_NOW = '2025-06-02T12:00:00.000Z';
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export const GROUPS = ['acme', 'tools'] as const;
/**
 * An empty subgroup of acme: the humans scenario's person moves projects there and back (within `acme/**`, and within
 * acme's top level, as the forge requires of a project whose registry holds tags). No policy lists it.
 */
export const SUBGROUP = { id: 12, path: 'platform', parent: 'acme' } as const;
export const PROJECTS = ['acme/api', 'acme/web', 'acme/worker', 'tools/cli'] as const;

/** The rules of the policy file (policy-file.ts) in the order it lists them; users below are made to hit each one. */
export const ACCESS = {
  leadPattern: '^lead-',
  staffDomain: 'acme.com',
  partnerDomain: 'partner.example',
  spamPattern: '^spam',
  denyPendingAfter: '30d',
} as const;

export const TITLES = { ssh: '^ci-runner-', deploy: '^release-' } as const;

/** The person of the humans scenario (humans.ts): an administrator with a token of their own. */
export const PERSON = { id: 2, username: 'ops-person', token: 'glpat-chaos-person-token-0000' } as const;
export const REGISTRY = {
  nameRegexDelete: '.*',
  nameRegexKeep: '^(main|v\\d+\\.\\d+\\.\\d+)$',
  keepN: 5,
  olderThan: '1d',
  /** Tags one bulk call deletes (the hosted edition's cap), so cleaning takes follow-up calls an hour apart. */
  cap: 10,
} as const;

export interface Design {
  world: World;
  /** Ids of the failed jobs the daemon must retry (once each). */
  retriedJobs: Set<number>;
  /** Repository id → tag names left once cleaning is complete. */
  tagsLeft: Map<number, Set<string>>;
  /** `source:id:user` → access level approved, or 'deny'. Requests not listed stay pending. */
  accessDecisions: Map<string, number | 'deny'>;
  /** Ids of SSH keys and deploy keys to rotate. */
  rotatedSshKeys: Set<number>;
  rotatedDeployKeys: Set<number>;
  /** Each project setting before the run and as a correct daemon leaves it (project-settings.ts). */
  settings: readonly SettingsItem[];
  /** The token families the token policy manages or must leave alone (TOKEN_FAMILIES). */
  tokens: readonly TokenFamily[];
}

/**
 * A token family of the world: a project or group access token or a deploy token, by its holder and name (an overlap
 * makes a new token, of a new bot, beside the old one, so the name is what ties them), the variable its value is
 * delivered to, and whether a correct daemon rotates it (due within before_expiry 14d, and matched by the policy).
 */
export interface TokenFamily {
  kind: 'project' | 'group' | 'deploy';
  holder: string;
  name: string;
  oldId: number;
  oldValue: string;
  expires: string;
  variable: string;
  rotate: boolean;
}

/** The token policy's names (policy-file.ts) and the families of the world, due or not. */
export const TOKENS = { accessNames: '^ci-deploy$', groupNames: '^group-ci$', deployNames: '^registry-pull$' } as const;
export const TOKEN_FAMILIES: readonly TokenFamily[] = [
  // strategy rotate
  {
    kind: 'project',
    holder: 'acme/api',
    name: 'ci-deploy',
    oldId: 701,
    oldValue: 'glpat-chaos-api-ci-deploy-0001',
    expires: 'now+5d',
    variable: 'DEPLOY_TOKEN',
    rotate: true,
  },
  // strategy overlap, grace 1h
  {
    kind: 'project',
    holder: 'acme/web',
    name: 'ci-deploy',
    oldId: 702,
    oldValue: 'glpat-chaos-web-ci-deploy-0001',
    expires: 'now+3d',
    variable: 'DEPLOY_TOKEN',
    rotate: true,
  },
  // Not due yet.
  {
    kind: 'project',
    holder: 'acme/worker',
    name: 'ci-deploy',
    oldId: 703,
    oldValue: 'glpat-chaos-worker-ci-deploy-01',
    expires: 'now+60d',
    variable: 'DEPLOY_TOKEN',
    rotate: false,
  },
  // Due, but no name the policy manages.
  {
    kind: 'project',
    holder: 'acme/api',
    name: 'ci-other',
    oldId: 705,
    oldValue: 'glpat-chaos-api-ci-other-00001',
    expires: 'now+2d',
    variable: 'OTHER_TOKEN',
    rotate: false,
  },
  {
    kind: 'group',
    holder: 'acme',
    name: 'group-ci',
    oldId: 704,
    oldValue: 'glpat-chaos-acme-group-ci-0001',
    expires: 'now+4d',
    variable: 'GROUP_CI_TOKEN',
    rotate: true,
  },
  // Deploy tokens are overlap only.
  {
    kind: 'deploy',
    holder: 'acme/api',
    name: 'registry-pull',
    oldId: 801,
    oldValue: 'gldt-chaos-api-registry-pull-1',
    expires: 'now+6d',
    variable: 'REGISTRY_PASSWORD',
    rotate: true,
  },
];

/** The world's credentials of one holder: its access tokens, deploy tokens and the variable already holding one value. */
function credentialsOf(holder: string): Pick<ProjectInput, 'access_tokens' | 'deploy_tokens' | 'variables'> {
  const families = TOKEN_FAMILIES.filter((f) => f.holder === holder);
  return {
    access_tokens: families
      .filter((f) => f.kind !== 'deploy')
      .map((f) => ({
        id: f.oldId,
        token: f.oldValue,
        name: f.name,
        scopes: ['read_api' as const],
        access_level: 'developer' as const,
        expires_at: f.expires,
      })),
    deploy_tokens: families
      .filter((f) => f.kind === 'deploy')
      .map((f) => ({
        id: f.oldId,
        token: f.oldValue,
        name: f.name,
        username: 'ci-registry',
        scopes: ['read_registry' as const],
        expires_at: f.expires,
      })),
    // acme/api's variable exists already (updated in place); the others are created by the delivery.
    variables:
      holder === 'acme/api'
        ? [{ key: 'DEPLOY_TOKEN', value: TOKEN_FAMILIES[0].oldValue, masked: true, protected: true }]
        : [],
  };
}

export function accessKey(source: string, sourceId: number, userId: number): string {
  return `${source}:${sourceId}:${userId}`;
}

const RETRYABLE_LOGS = [
  'npm ERR! errno ECONNRESET\nError: read ECONNRESET: connection reset by peer\nERROR: Job failed: exit code 1\n',
  'Error: connect ETIMEDOUT 10.0.0.12:443\nERROR: Job failed: exit code 1\n',
];
/**
 * What a job retried while the storm scenario's runners are down fails with: the ETIMEDOUT failures' own log and
 * reason, the larger of the world's two signatures (16 jobs, the connection resets 12), so its probes fail with the
 * storm's signature.
 */
export const OUTAGE = { failure_reason: 'script_failure', log: RETRYABLE_LOGS[1] } as const;
const GENUINE_LOG = 'FAIL src/orders.spec.ts\n  expected 200, received 500\nERROR: Job failed: exit code 1\n';

export function buildDesign(): Design {
  let nextJobId = 1000;
  let nextPipelineId = 100;
  const retriedJobs = new Set<number>();
  const job = (fields: Partial<JobInput> & { name: string }, retry = false): JobInput => {
    const id = nextJobId++;
    if (retry) retriedJobs.add(id);
    return { id, stage: 'test', status: 'failed', ...fields };
  };

  const pipelinesOf = (): PipelineInput[] =>
    Array.from({ length: 3 }, (_, p) => {
      const jobs: JobInput[] = [
        { id: nextJobId++, name: 'build', stage: 'build', status: 'success', log: 'build OK\n' },
        job({ name: 'test-unit', log: RETRYABLE_LOGS[0] }, true),
        job({ name: 'e2e', log: RETRYABLE_LOGS[1] }, true),
        // Failed for a reason that is no network blip: left alone.
        job({ name: 'test-orders', log: GENUINE_LOG }),
        // Allowed to fail, and a stage the policy does not cover: left alone although the log matches.
        job({ name: 'audit-deps', allow_failure: true, log: RETRYABLE_LOGS[1] }),
        job({ name: 'deploy-preview', stage: 'deploy', log: RETRYABLE_LOGS[0] }),
      ];
      if (p === 0) {
        // Retried twice already (max_retries 2): the newest attempt is left alone.
        jobs.push(job({ name: 'integration', retried: true, log: RETRYABLE_LOGS[0] }));
        jobs.push(job({ name: 'integration', retried: true, log: RETRYABLE_LOGS[0] }));
        jobs.push(job({ name: 'integration', log: RETRYABLE_LOGS[0] }));
      }
      if (p === 1) {
        // Retried once: one retry left.
        jobs.push(job({ name: 'integration', retried: true, log: RETRYABLE_LOGS[1] }));
        jobs.push(job({ name: 'integration', log: RETRYABLE_LOGS[1] }, true));
      }
      return { id: nextPipelineId++, ref: 'main', created_at: `now-${(3 - p) * 3}h`, jobs };
    });

  const buildTags = (count: number, oldestDaysAgo: number): TagInput[] => [
    { name: 'latest', created_at: 'now-1h' },
    { name: 'main', created_at: 'now-2h' },
    { name: 'v1.0.0', created_at: 'now-60d' },
    { name: 'v1.1.0', created_at: 'now-30d' },
    // No timestamp: counts as the newest for keep_n, never deleted by older_than.
    { name: 'nightly', created_at: null },
    ...Array.from({ length: count }, (_, i) => ({
      name: `build-${String(i).padStart(3, '0')}`,
      created_at: new Date(Date.parse(CHAOS_NOW) - oldestDaysAgo * DAY_MS + i * 6 * HOUR_MS).toISOString(),
    })),
  ];
  const registries: { projectIndex: number; id: number; name: string; tags: TagInput[] }[] = [
    { projectIndex: 0, id: 1, name: '', tags: buildTags(30, 40) },
    { projectIndex: 1, id: 2, name: 'frontend', tags: buildTags(20, 30) },
    { projectIndex: 2, id: 3, name: 'worker', tags: buildTags(12, 20) },
  ];

  const users: UserInput[] = [
    {
      id: 1,
      username: 'root',
      name: 'Administrator',
      email: 'root@acme.com',
      admin: true,
      two_factor: true,
      tokens: [ADMIN_TOKEN],
    },
    // The person of the humans scenario (humans.ts), an administrator with a token of their own.
    {
      id: PERSON.id,
      username: PERSON.username,
      name: 'Ops Person',
      email: 'ops@acme.com',
      admin: true,
      two_factor: true,
      tokens: [PERSON.token],
    },
  ];
  const accessDecisions = new Map<string, number | 'deny'>();
  const requests: { source: 'group' | 'project'; ref: string; sourceId: number; user: string; requested_at: string }[] =
    [];
  // Requesters, spread over two groups and a project: [username, email domain, two-factor, external, state, days ago, outcome].
  const requesters: [string, string, boolean, boolean, 'active' | 'blocked', number, number | 'deny' | 'leave'][] = [
    ['lead-ann', ACCESS.staffDomain, true, false, 'active', 1, 40],
    ['lead-bo', ACCESS.staffDomain, true, false, 'active', 2, 40],
    ['dev-01', ACCESS.staffDomain, true, false, 'active', 1, 30],
    ['dev-02', ACCESS.staffDomain, true, false, 'active', 3, 30],
    ['dev-03', ACCESS.staffDomain, true, false, 'active', 2, 30],
    ['dev-04', ACCESS.staffDomain, true, false, 'active', 5, 30],
    ['dev-05', ACCESS.staffDomain, true, false, 'active', 1, 30],
    ['dev-06', ACCESS.staffDomain, true, false, 'active', 4, 30],
    ['partner-1', ACCESS.partnerDomain, true, false, 'active', 2, 20],
    ['partner-2', ACCESS.partnerDomain, true, false, 'active', 6, 20],
    ['partner-3', ACCESS.partnerDomain, true, false, 'active', 1, 20],
    ['spam-1', 'spam.example', false, false, 'active', 1, 'deny'],
    ['spam-2', 'spam.example', false, false, 'active', 2, 'deny'],
    ['spam-3', 'spam.example', false, false, 'active', 1, 'deny'],
    // No two-factor, external, blocked: no rule approves them, and they are recent, so they wait for people.
    ['nofa-1', ACCESS.staffDomain, false, false, 'active', 2, 'leave'],
    ['nofa-2', ACCESS.staffDomain, false, false, 'active', 3, 'leave'],
    ['ext-1', ACCESS.staffDomain, true, true, 'active', 1, 'leave'],
    ['blocked-1', ACCESS.staffDomain, true, false, 'blocked', 2, 'leave'],
    // Pending longer than deny_pending_after.
    ['old-1', 'mail.example', false, false, 'active', 40, 'deny'],
    ['old-2', 'mail.example', false, false, 'active', 45, 'deny'],
  ];
  const sources: { source: 'group' | 'project'; ref: string; sourceId: number }[] = [
    { source: 'group', ref: 'acme', sourceId: 10 },
    { source: 'group', ref: 'tools', sourceId: 11 },
    { source: 'project', ref: 'acme/web', sourceId: 2 },
  ];
  requesters.forEach(([username, domain, twoFactor, external, state, daysAgo, outcome], i) => {
    const id = 100 + i;
    users.push({
      id,
      username,
      name: username,
      email: `${username}@${domain}`,
      two_factor: twoFactor,
      external,
      state,
      created_at: 'now-400d',
      tokens: [],
    });
    const where = sources[i % sources.length];
    requests.push({ ...where, user: username, requested_at: `now-${daysAgo}d` });
    if (outcome !== 'leave') accessDecisions.set(accessKey(where.source, where.sourceId, id), outcome);
  });

  const rotatedSshKeys = new Set<number>();
  const rotatedDeployKeys = new Set<number>();
  const publicKey = (comment: string): string => generateOpenSshKeyPair('ed25519', comment).publicKey;
  const sshKeys: { id: number; title: string; expires: string; rotate: boolean }[] = [
    { id: 501, title: 'ci-runner-1', expires: 'now+5d', rotate: true },
    { id: 502, title: 'ci-runner-2', expires: 'now+10d', rotate: true },
    { id: 503, title: 'ci-runner-3', expires: 'now+2d', rotate: true },
    // Not due yet, and not managed by the policy.
    { id: 504, title: 'ci-runner-4', expires: 'now+60d', rotate: false },
    { id: 505, title: 'root laptop', expires: 'now+3d', rotate: false },
  ];
  users[0].ssh_keys = sshKeys.map((k) => {
    if (k.rotate) rotatedSshKeys.add(k.id);
    return { id: k.id, title: k.title, key: publicKey(k.title), created_at: 'now-80d', expires_at: k.expires };
  });
  const deployKeys: { id: number; title: string; created: string; projects: [string, boolean][]; rotate: boolean }[] = [
    {
      id: 601,
      title: 'release-api',
      created: 'now-120d',
      projects: [
        ['acme/api', true],
        ['acme/web', false],
      ],
      rotate: true,
    },
    { id: 602, title: 'release-worker', created: 'now-100d', projects: [['acme/worker', true]], rotate: true },
    { id: 603, title: 'release-cli', created: 'now-30d', projects: [['tools/cli', false]], rotate: false },
    { id: 604, title: 'ops-mirror', created: 'now-200d', projects: [['acme/api', false]], rotate: false },
  ];
  for (const k of deployKeys) if (k.rotate) rotatedDeployKeys.add(k.id);

  const projects: ProjectInput[] = PROJECTS.map((fullPath, index) => {
    const [namespace, path] = fullPath.split('/');
    return {
      id: index + 1,
      path,
      namespace,
      members: [{ user: 'root', access_level: 'owner' }],
      protected_branches: WORLD_PROTECTIONS[fullPath] ?? [],
      access_requests: requests
        .filter((r) => r.source === 'project' && r.ref === fullPath)
        .map((r) => ({ user: r.user, requested_at: r.requested_at })),
      pipelines: pipelinesOf(),
      registry: registries
        .filter((r) => r.projectIndex === index)
        .map((r) => ({ id: r.id, name: r.name, created_at: 'now-200d', tags: r.tags })),
      ...credentialsOf(fullPath),
    };
  });

  const world: World = {
    now: CHAOS_NOW,
    settings: { bulk_delete_delay_ms: 50, bulk_delete_cap: REGISTRY.cap },
    users,
    groups: [
      ...GROUPS.map((path, i) => ({
        ...credentialsOf(path),
        id: 10 + i,
        path,
        // The person owns the groups too, so the bot's user is not their last owner and its role can be lowered.
        members: [
          { user: 'root', access_level: 'owner' as const },
          { user: PERSON.username, access_level: 'owner' as const },
        ],
        access_requests: requests
          .filter((r) => r.source === 'group' && r.ref === path)
          .map((r) => ({ user: r.user, requested_at: r.requested_at })),
      })),
      { id: SUBGROUP.id, path: SUBGROUP.path, parent: SUBGROUP.parent, members: [] },
    ],
    projects,
    deploy_keys: deployKeys.map((k) => ({
      id: k.id,
      title: k.title,
      key: publicKey(k.title),
      created_at: k.created,
      projects: k.projects.map(([project, canPush]) => ({ project, can_push: canPush })),
    })),
  };

  // What complete cleaning leaves: the uncapped result of the forge's own selection, which capped calls an hour apart
  // reach step by step (each call keeps the same newest tags and deletes the oldest of the rest).
  const tagsLeft = new Map<number, Set<string>>();
  for (const r of registries) {
    const tags = r.tags.map((t) => ({
      name: t.name,
      createdAt: t.created_at === null || t.created_at === undefined ? null : resolveRelative(t.created_at),
    }));
    const outcome = selectTagsToDelete(
      tags,
      {
        name_regex_delete: REGISTRY.nameRegexDelete,
        name_regex_keep: REGISTRY.nameRegexKeep,
        keep_n: REGISTRY.keepN,
        older_than: REGISTRY.olderThan,
      },
      new Date(CHAOS_NOW),
    );
    if (!outcome.ok) throw new Error(`chaos world: registry ${r.id}: ${outcome.error}`);
    const deleted = new Set(outcome.toDelete);
    tagsLeft.set(r.id, new Set(r.tags.map((t) => t.name).filter((name) => !deleted.has(name))));
  }

  return {
    world,
    retriedJobs,
    tagsLeft,
    accessDecisions,
    rotatedSshKeys,
    rotatedDeployKeys,
    settings: SETTINGS_ITEMS,
    tokens: TOKEN_FAMILIES,
  };
}

/** `now-1h` and ISO times, against CHAOS_NOW (only the forms this file uses). */
function resolveRelative(value: string): Date {
  const match = /^now-(\d+)([hd])$/.exec(value);
  if (!match) return new Date(value);
  const unit = match[2] === 'h' ? HOUR_MS : DAY_MS;
  return new Date(Date.parse(CHAOS_NOW) - Number(match[1]) * unit);
}
