import { readSourceFile } from '../config/load';
import { ConfigError, formatPath, formatProblem } from '../config/problems';
import { YamlSource } from '../config/yaml-source';
import { ACCESS_LEVEL_NAMES, ACCESS_LEVEL_VALUES, ACCESS_LEVELS } from '../gitlab/types/access-levels';
import { USER_STATES, VISIBILITIES } from '../gitlab/types/common';
import { PROJECT_HOOK_EVENT_FLAGS, type ProjectHookEventFlag } from '../gitlab/types/hooks';
import { JOB_STATUSES } from '../gitlab/types/jobs';
import {
  DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL,
  PROTECTED_BRANCH_ACCESS_LEVEL_NAMES,
  PROTECTED_BRANCH_ACCESS_LEVEL_VALUES,
  PROTECTED_BRANCH_ACCESS_LEVELS,
} from '../gitlab/types/protected-branches';
import { RESOURCE_LABEL_EVENT_ACTIONS } from '../gitlab/types/resource-events';
import { z } from 'zod';
import { parseDuration } from './duration';
import { parseGpgPublicKey } from './gpg-key';
import { parseSshPublicKey } from './ssh-key';
import { approvalRuleSchema, approvalSettingsSchema, checkProjectConfig, integrationSchema } from './world-project-config';
import { checkCredentials, credentialSchemas, userTokenValue } from './world-credentials';

/**
 * The world file: everything the sandbox forge knows at start. Validated strictly (unknown keys are errors, so a
 * typo never silently seeds nothing), with cross references checked (members, namespaces, job users). Omitted ids
 * are assigned in file order; omitted timestamps default to the sandbox clock's start.
 */

const RELATIVE = /^now\s*(?:([+-])\s*(.+))?$/;

/**
 * Timestamps are ISO 8601, or relative to the clock's start: `now`, `now-3d`, `now+20d` (durations as for
 * `older_than`), so a world stays believable whatever day it is served.
 */
export function resolveTimestamp(value: string, startMs: number): string {
  const relative = RELATIVE.exec(value.trim());
  if (!relative) return new Date(value).toISOString();
  const offset = relative[2] !== undefined ? (parseDuration(relative[2]) ?? 0) : 0;
  return new Date(startMs + (relative[1] === '-' ? -offset : offset)).toISOString();
}

function isTimestamp(value: string): boolean {
  const relative = RELATIVE.exec(value.trim());
  if (relative) return relative[2] === undefined || parseDuration(relative[2]) !== undefined;
  return /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value));
}

const timestamp = z
  .string()
  .refine(isTimestamp, { message: 'must be an ISO 8601 timestamp or relative to now (now-3d, now+2w)' });
const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'must be a date YYYY-MM-DD' });
const id = z.number().int().positive();
const { userToken, placeCredentials } = credentialSchemas(timestamp, id);

/** A member's role by name (`developer`) or number (`30`); yields the number. */
const accessLevel = z
  .union([z.literal(ACCESS_LEVEL_VALUES), z.enum(ACCESS_LEVEL_NAMES)])
  .transform((value) => (typeof value === 'number' ? value : ACCESS_LEVELS[value]));

const visibility = z.enum(VISIBILITIES);

const sshKeySchema = z.strictObject({
  id: id.optional(),
  title: z.string().min(1),
  key: z.string().refine((key) => parseSshPublicKey(key) !== undefined, { message: 'is not a valid SSH public key' }),
  created_at: timestamp.optional(),
  expires_at: timestamp.nullable().optional(),
});

const gpgKeySchema = z.strictObject({
  id: id.optional(),
  /** Armored public key block. */
  key: z.string().refine((key) => typeof parseGpgPublicKey(key) !== 'string', {
    message: 'is not an armored GPG public key block',
  }),
  created_at: timestamp.optional(),
});

const userSchema = z.strictObject({
  id: id.optional(),
  username: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, { message: 'must be a valid username' }),
  name: z.string().optional(),
  email: z.string().optional(),
  /** Personal access tokens: a value (scope `api`, no expiry) or `{token, name, scopes, expires_at, revoked}`. */
  tokens: z.array(userToken).default([]),
  admin: z.boolean().default(false),
  state: z.enum(USER_STATES).default('active'),
  two_factor: z.boolean().default(false),
  external: z.boolean().default(false),
  /** Shorthand for `user_type: project_bot`. */
  bot: z.boolean().optional(),
  user_type: z.enum(['human', 'project_bot', 'service_account', 'alert_bot', 'support_bot', 'ghost']).optional(),
  confirmed_at: timestamp.nullable().optional(),
  created_at: timestamp.optional(),
  last_sign_in_at: timestamp.nullable().optional(),
  current_sign_in_at: timestamp.nullable().optional(),
  last_activity_on: date.nullable().optional(),
  bio: z.string().default(''),
  location: z.string().nullable().default(null),
  public_email: z.string().default(''),
  organization: z.string().default(''),
  job_title: z.string().default(''),
  skype: z.string().default(''),
  linkedin: z.string().default(''),
  twitter: z.string().default(''),
  website_url: z.string().default(''),
  note: z.string().nullable().default(null),
  identities: z.array(z.strictObject({ provider: z.string(), extern_uid: z.string() })).default([]),
  custom_attributes: z.record(z.string(), z.string()).default({}),
  projects_limit: z.number().int().nonnegative().default(100000),
  can_create_group: z.boolean().default(true),
  can_create_project: z.boolean().default(true),
  private_profile: z.boolean().default(false),
  ssh_keys: z.array(sshKeySchema).default([]),
  gpg_keys: z.array(gpgKeySchema).default([]),
});

/** A label as it appears in label events: a name, or a name with color (hex) and description. */
const labelSchema = z.union([
  z.string().min(1),
  z.strictObject({
    name: z.string().min(1),
    color: z
      .string()
      .regex(/^#[0-9A-Fa-f]{6}$/, { message: 'must be a hex color #RRGGBB' })
      .optional(),
    description: z.string().nullable().optional(),
  }),
]);

const labelEventSchema = z.strictObject({
  id: id.optional(),
  user: z.string(),
  action: z.enum(RESOURCE_LABEL_EVENT_ACTIONS),
  label: labelSchema,
  created_at: timestamp.optional(),
});

const weightEventSchema = z.strictObject({
  id: id.optional(),
  user: z.string(),
  weight: z.number().int().nonnegative(),
  created_at: timestamp.optional(),
});

/** An epic of a group (top tier); `:epic_id` in the API is its `id`. */
const epicSchema = z.strictObject({
  id: id.optional(),
  iid: id,
  title: z.string().default(''),
  label_events: z.array(labelEventSchema).default([]),
});

const issueSchema = z.strictObject({
  id: id.optional(),
  iid: id,
  title: z.string().default(''),
  label_events: z.array(labelEventSchema).default([]),
  weight_events: z.array(weightEventSchema).default([]),
});

const mergeRequestSchema = z.strictObject({
  id: id.optional(),
  iid: id,
  title: z.string().default(''),
  label_events: z.array(labelEventSchema).default([]),
});

/** A protected branch access level by name (`maintainer`) or number (`40`); yields the number. */
const branchAccessLevel = z
  .union([z.literal(PROTECTED_BRANCH_ACCESS_LEVEL_VALUES), z.enum(PROTECTED_BRANCH_ACCESS_LEVEL_NAMES)])
  .transform((value) => (typeof value === 'number' ? value : PROTECTED_BRANCH_ACCESS_LEVELS[value]));
/** A user (username) or group (full path) given access besides the access level (higher tiers). */
const branchAllowedSchema = z.union([z.strictObject({ user: z.string() }), z.strictObject({ group: z.string() })]);

const protectedBranchSchema = z.strictObject({
  id: id.optional(),
  /** A branch name or wildcard (`release/*`). */
  name: z.string().min(1),
  push_access_level: branchAccessLevel.default(DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL),
  merge_access_level: branchAccessLevel.default(DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL),
  unprotect_access_level: branchAccessLevel.default(DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL),
  allow_force_push: z.boolean().default(false),
  code_owner_approval_required: z.boolean().default(false),
  allowed_to_push: z.array(branchAllowedSchema).default([]),
  allowed_to_merge: z.array(branchAllowedSchema).default([]),
  allowed_to_unprotect: z.array(branchAllowedSchema).default([]),
});


/** A webhook URL the forge accepts: http or https (anything else is its 422 `Invalid url given`). */
export function isHookUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** The forge's `web_hooks.push_events` column defaults to true, every other flag to false. */
const hookFlag = (flag: ProjectHookEventFlag) => z.boolean().default(flag === 'push_events');
const hookFlags = Object.fromEntries(PROJECT_HOOK_EVENT_FLAGS.map((flag) => [flag, hookFlag(flag)])) as Record<
  ProjectHookEventFlag,
  ReturnType<typeof hookFlag>
>;
/** A project webhook; deliveries go to `url` when a job or pipeline of the project changes (sandbox README). */
const hookSchema = z.strictObject({
  id: id.optional(),
  url: z.string().refine(isHookUrl, { message: 'must be an http(s) URL' }),
  name: z.string().nullable().default(null),
  description: z.string().nullable().default(null),
  /** Sent as `X-Gitlab-Token`; never shown by the API. */
  token: z.string().optional(),
  created_at: timestamp.optional(),
  enable_ssl_verification: z.boolean().default(true),
  push_events_branch_filter: z.string().nullable().default(null),
  /** Header name to value, sent with every delivery; the API shows the names only. */
  custom_headers: z.record(z.string(), z.string()).default({}),
  ...hookFlags,
});

const memberSchema = z.strictObject({ user: z.string(), access_level: accessLevel, created_at: timestamp.optional() });
const accessRequestSchema = z.strictObject({ user: z.string(), requested_at: timestamp.optional() });

const groupSchema = z.strictObject({
  id: id.optional(),
  path: z.string().regex(/^[A-Za-z0-9_.-]+$/, { message: 'must be a single path segment' }),
  name: z.string().optional(),
  /** Full path of the parent group; omitted for a top-level group. */
  parent: z.string().optional(),
  description: z.string().default(''),
  visibility: visibility.default('private'),
  request_access_enabled: z.boolean().default(true),
  created_at: timestamp.optional(),
  members: z.array(memberSchema).default([]),
  access_requests: z.array(accessRequestSchema).default([]),
  epics: z.array(epicSchema).default([]),
  ...placeCredentials,
});

const artifactSchema = z.strictObject({
  file_type: z.string(),
  size: z.number().int().nonnegative(),
  filename: z.string(),
  file_format: z.string().nullable().default(null),
});

const jobSchema = z.strictObject({
  id: id.optional(),
  name: z.string().min(1),
  stage: z.string().default('test'),
  status: z.enum(JOB_STATUSES).default('success'),
  allow_failure: z.boolean().default(false),
  created_at: timestamp.optional(),
  started_at: timestamp.nullable().optional(),
  finished_at: timestamp.nullable().optional(),
  /** The job log (trace); null or omitted means the job has none. */
  log: z.string().nullable().default(null),
  retried: z.boolean().default(false),
  /** Username of the user who triggered the job; defaults to the pipeline's user (itself the first admin by default). */
  user: z.string().optional(),
  /** CI job token; it authenticates `GET /job` while the job is running. */
  token: z.string().optional(),
  failure_reason: z.string().optional(),
  artifacts: z.array(artifactSchema).default([]),
  artifacts_expire_at: timestamp.nullable().optional(),
  tag_list: z.array(z.string()).default([]),
  coverage: z.number().nullable().default(null),
});

const bridgeSchema = z.strictObject({
  id: id.optional(),
  name: z.string().min(1),
  stage: z.string().default('deploy'),
  status: z.enum(JOB_STATUSES).default('success'),
  allow_failure: z.boolean().default(false),
  created_at: timestamp.optional(),
  started_at: timestamp.nullable().optional(),
  finished_at: timestamp.nullable().optional(),
  retried: z.boolean().default(false),
  user: z.string().optional(),
  /** Id of the downstream pipeline (declared anywhere in the world). */
  downstream_pipeline: id.optional(),
});

const pipelineSchema = z.strictObject({
  id: id.optional(),
  ref: z.string().default('main'),
  tag: z.boolean().default(false),
  sha: z.string().regex(/^[0-9a-f]{40}$/, { message: 'must be a 40-hex commit sha' }).optional(),
  /** Omitted: derived from the pipeline's latest jobs. */
  status: z.enum(JOB_STATUSES).optional(),
  source: z.string().default('push'),
  created_at: timestamp.optional(),
  /** Id of the parent pipeline: this one is a child pipeline, listed with the parent's jobs. */
  parent_pipeline: id.optional(),
  user: z.string().optional(),
  commit: z
    .strictObject({
      title: z.string().optional(),
      message: z.string().optional(),
      author_name: z.string().optional(),
      author_email: z.string().optional(),
    })
    .optional(),
  jobs: z.array(jobSchema).default([]),
  bridges: z.array(bridgeSchema).default([]),
});

const tagSchema = z.strictObject({
  name: z.string().regex(/^[\w][\w.-]{0,127}$/, { message: 'must be a valid image tag name' }),
  /** Manifest creation time; null (the default) for a tag without a timestamp. */
  created_at: timestamp.nullable().default(null),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/, { message: 'must be sha256:<64 hex>' }).optional(),
  total_size: z.number().int().nonnegative().optional(),
});

const repositorySchema = z.strictObject({
  id: id.optional(),
  /** Empty for the project's root repository. */
  name: z.string().default(''),
  created_at: timestamp.optional(),
  tags: z.array(tagSchema).default([]),
});

const projectSchema = z.strictObject({
  id: id.optional(),
  path: z.string().regex(/^[A-Za-z0-9_.-]+$/, { message: 'must be a single path segment' }),
  /** Full path of the owning group, or a username for a personal project. */
  namespace: z.string(),
  name: z.string().optional(),
  description: z.string().nullable().default(null),
  visibility: visibility.default('private'),
  request_access_enabled: z.boolean().default(true),
  created_at: timestamp.optional(),
  /** An archived project is read-only: its jobs cannot be retried, canceled, played or erased, nor its images deleted. */
  archived: z.boolean().default(false),
  default_branch: z.string().min(1).default('main'),
  /** Omitted: the project's `created_at`. */
  last_activity_at: timestamp.optional(),
  members: z.array(memberSchema).default([]),
  access_requests: z.array(accessRequestSchema).default([]),
  /** Kubernetes agents whose CI access covers this project (`GET /job/allowed_agents`). */
  allowed_agents: z.array(z.strictObject({ id: id, config_project: z.string() })).default([]),
  pipelines: z.array(pipelineSchema).default([]),
  registry: z.array(repositorySchema).default([]),
  /** Groups (full paths) the project is shared with; they may be given access to protected branches. */
  shared_with_groups: z.array(z.string()).default([]),
  protected_branches: z.array(protectedBranchSchema).default([]),
  issues: z.array(issueSchema).default([]),
  merge_requests: z.array(mergeRequestSchema).default([]),
  /** Project webhooks (GitLab's "Project webhooks API"). */
  hooks: z.array(hookSchema).default([]),
  /** Merge request approval settings; omitted ones keep the forge's defaults (world-project-config.ts). */
  approval_settings: approvalSettingsSchema.default({}),
  approval_rules: z.array(approvalRuleSchema).default([]),
  /** Integrations set on the project, each once. */
  integrations: z.array(integrationSchema).default([]),
  ...placeCredentials,
});

const deployKeySchema = z.strictObject({
  id: id.optional(),
  title: z.string().min(1),
  key: z.string().refine((key) => parseSshPublicKey(key) !== undefined, { message: 'is not a valid SSH public key' }),
  created_at: timestamp.optional(),
  expires_at: timestamp.nullable().optional(),
  /** Projects (full paths) the key is enabled on; one key may serve several projects. */
  projects: z.array(z.strictObject({ project: z.string(), can_push: z.boolean().default(false) })).default([]),
});

/**
 * Requests per user (a download: per user and group, or user and project) per `window_ms` of the group and project
 * import/export endpoints; 0 turns a limit off. Omitted keys keep the forge's defaults (6 exports, 1 download, 6
 * imports a minute). Also the body of `POST /__sandbox/settings`.
 */
export const exportRateLimitsSchema = z.strictObject({
  group_export: z.number().int().nonnegative().optional(),
  group_download_export: z.number().int().nonnegative().optional(),
  group_import: z.number().int().nonnegative().optional(),
  project_export: z.number().int().nonnegative().optional(),
  project_download_export: z.number().int().nonnegative().optional(),
  project_import: z.number().int().nonnegative().optional(),
  window_ms: z.number().int().positive().optional(),
});
export type WorldExportRateLimits = z.output<typeof exportRateLimitsSchema>;

/** Bytes of `tree/padding.bin` in group and project export archives; bounded, as the archive is built in memory. */
export const exportPaddingBytes = z.number().int().nonnegative().max(256 * 1024 * 1024);

/** Upper bound of generated projects: a typo (`projects_per_group: 50000`) must not exhaust memory. */
const MAX_GENERATED_PROJECTS = 200_000;

/**
 * Many groups and projects for benchmarks and load tests, appended to those the file declares: `groups` top-level
 * groups `<path_prefix>-01`…, each with `subgroups_per_group` subgroups `sub-01`…, and `projects_per_group`
 * projects `project-01`… in every one of them (top-level and subgroup alike; numbers zero-padded), the last
 * `archived_projects_per_group` of each archived. Each project gets one pipeline with `failed_jobs_per_project`
 * failed jobs whose log names a transient failure. `members` join every generated top-level group (and so its
 * subgroups and projects). With `parent` (a group the file declares) the "top-level" groups are made its subgroups
 * instead, so that one glob (`big/**`) covers them all.
 */
const generateSchema = z
  .strictObject({
    groups: z.number().int().positive(),
    subgroups_per_group: z.number().int().nonnegative().default(0),
    projects_per_group: z.number().int().nonnegative(),
    failed_jobs_per_project: z.number().int().nonnegative().max(1000).default(0),
    archived_projects_per_group: z.number().int().nonnegative().default(0),
    path_prefix: z.string().regex(/^[A-Za-z0-9_.-]+$/, { message: 'must be a single path segment' }).default('group'),
    /** Full path of a declared group the generated groups go under; top level when omitted. */
    parent: z.string().min(1).optional(),
    visibility: visibility.default('private'),
    members: z.array(memberSchema).default([]),
  })
  .refine((g) => g.groups * (1 + g.subgroups_per_group) * g.projects_per_group <= MAX_GENERATED_PROJECTS, {
    message: `generates more than ${MAX_GENERATED_PROJECTS.toLocaleString('en')} projects`,
  });
export type WorldGenerate = z.output<typeof generateSchema>;

export const worldSchema = z
  .strictObject({
    /** Start of the sandbox clock; the real time when omitted. */
    now: timestamp.optional(),
    registry_host: z.string().default('registry.sandbox.test'),
    settings: z
      .strictObject({
        bulk_delete_delay_ms: z.number().int().nonnegative().optional(),
        bulk_delete_cap: z.number().int().positive().nullable().optional(),
        /** How long a webhook delivery may take; the forge's `webhook_timeout` is 10 s. */
        hook_timeout_ms: z.number().int().positive().optional(),
        /** Delay of export and import work (groups and projects); `bulk_delete_delay_ms` when omitted or null. */
        export_delay_ms: z.number().int().nonnegative().nullable().optional(),
        export_rate_limits: exportRateLimitsSchema.optional(),
        export_padding_bytes: exportPaddingBytes.optional(),
        download_bytes_per_second: z.number().int().nonnegative().optional(),
      })
      .default({}),
    users: z.array(userSchema).default([]),
    groups: z.array(groupSchema).default([]),
    projects: z.array(projectSchema).default([]),
    deploy_keys: z.array(deployKeySchema).default([]),
    generate: generateSchema.optional(),
  })
  .superRefine((world, ctx) =>
    checkReferences(world, (path, message) => ctx.addIssue({ code: 'custom', path, message })),
  )
  // Runs only on a valid world: the generated groups and projects are valid by construction.
  .transform(({ generate, ...world }) => (generate ? withGenerated(world, generate) : world));

/** A world as written (ids, timestamps and most fields optional). */
export type World = z.input<typeof worldSchema>;
/** A validated world with defaults filled in. */
export type ParsedWorld = z.output<typeof worldSchema>;
// From the item schemas rather than ParsedWorld: the world's own transform (generated projects) builds these.
export type WorldUser = z.output<typeof userSchema>;
export type WorldGroup = z.output<typeof groupSchema>;
export type WorldProject = z.output<typeof projectSchema>;
export type WorldPipeline = z.output<typeof pipelineSchema>;
export type WorldJob = z.output<typeof jobSchema>;
export type WorldRepository = WorldProject['registry'][number];
export type WorldLabelEvent = z.output<typeof labelEventSchema>;
export type WorldWeightEvent = z.output<typeof weightEventSchema>;
export type WorldProtectedBranch = WorldProject['protected_branches'][number];
export type WorldHook = WorldProject['hooks'][number];

function checkReferences(
  world: {
    users: WorldUser[];
    groups: WorldGroup[];
    projects: WorldProject[];
    deploy_keys: z.output<typeof deployKeySchema>[];
    generate?: WorldGenerate;
  },
  report: (path: (string | number)[], message: string) => void,
): void {
  const usernames = new Set<string>();
  const tokens = new Set<string>();
  world.users.forEach((user, i) => {
    const lower = user.username.toLowerCase();
    if (usernames.has(lower)) report(['users', i, 'username'], `duplicate username ${user.username}`);
    usernames.add(lower);
    user.tokens.forEach((token, t) => {
      const value = userTokenValue(token);
      if (tokens.has(value)) report(['users', i, 'tokens', t], 'token already belongs to another user');
      tokens.add(value);
    });
  });
  const userRef = (path: (string | number)[], username: string | undefined): void => {
    if (username !== undefined && !usernames.has(username.toLowerCase())) report(path, `unknown user ${username}`);
  };

  const groupPaths = new Set<string>();
  world.groups.forEach((group, i) => {
    if (group.parent !== undefined && !groupPaths.has(group.parent.toLowerCase())) {
      report(['groups', i, 'parent'], `unknown parent group ${group.parent} (declare parents before children)`);
    }
    const full = (group.parent ? `${group.parent}/${group.path}` : group.path).toLowerCase();
    if (groupPaths.has(full) || usernames.has(full)) report(['groups', i, 'path'], `namespace ${full} already exists`);
    groupPaths.add(full);
    group.members.forEach((m, j) => userRef(['groups', i, 'members', j, 'user'], m.user));
    group.access_requests.forEach((r, j) => userRef(['groups', i, 'access_requests', j, 'user'], r.user));
    checkIids(group.epics, ['groups', i, 'epics'], 'epic', report);
    group.epics.forEach((epic, e) =>
      epic.label_events.forEach((ev, v) => userRef(['groups', i, 'epics', e, 'label_events', v, 'user'], ev.user)),
    );
  });

  const projectPaths = new Set<string>();
  const pipelineIds = new Set<number>();
  world.projects.forEach((project) => project.pipelines.forEach((p) => p.id !== undefined && pipelineIds.add(p.id)));
  world.projects.forEach((project, i) => {
    const ns = project.namespace.toLowerCase();
    if (!groupPaths.has(ns) && !usernames.has(ns)) report(['projects', i, 'namespace'], `unknown namespace ${ns}`);
    const full = `${ns}/${project.path.toLowerCase()}`;
    if (projectPaths.has(full)) report(['projects', i, 'path'], `duplicate project ${full}`);
    projectPaths.add(full);
    project.members.forEach((m, j) => userRef(['projects', i, 'members', j, 'user'], m.user));
    project.access_requests.forEach((r, j) => userRef(['projects', i, 'access_requests', j, 'user'], r.user));
    project.pipelines.forEach((pipeline, p) => {
      userRef(['projects', i, 'pipelines', p, 'user'], pipeline.user);
      if (pipeline.parent_pipeline !== undefined && !pipelineIds.has(pipeline.parent_pipeline)) {
        report(['projects', i, 'pipelines', p, 'parent_pipeline'], `unknown pipeline ${pipeline.parent_pipeline}`);
      }
      pipeline.jobs.forEach((job, j) => userRef(['projects', i, 'pipelines', p, 'jobs', j, 'user'], job.user));
      pipeline.bridges.forEach((bridge, b) => {
        userRef(['projects', i, 'pipelines', p, 'bridges', b, 'user'], bridge.user);
        if (bridge.downstream_pipeline !== undefined && !pipelineIds.has(bridge.downstream_pipeline)) {
          report(
            ['projects', i, 'pipelines', p, 'bridges', b, 'downstream_pipeline'],
            `unknown pipeline ${bridge.downstream_pipeline}`,
          );
        }
      });
    });
    checkIids(project.issues, ['projects', i, 'issues'], 'issue', report);
    checkIids(project.merge_requests, ['projects', i, 'merge_requests'], 'merge request', report);
    project.issues.forEach((issue, n) => {
      issue.label_events.forEach((ev, v) => userRef(['projects', i, 'issues', n, 'label_events', v, 'user'], ev.user));
      issue.weight_events.forEach((ev, v) => userRef(['projects', i, 'issues', n, 'weight_events', v, 'user'], ev.user));
    });
    project.merge_requests.forEach((mr, n) =>
      mr.label_events.forEach((ev, v) => userRef(['projects', i, 'merge_requests', n, 'label_events', v, 'user'], ev.user)),
    );
    project.shared_with_groups.forEach((path, g) => {
      if (!groupPaths.has(path.toLowerCase())) report(['projects', i, 'shared_with_groups', g], `unknown group ${path}`);
    });
    const branchNames = new Set<string>();
    project.protected_branches.forEach((branch, b) => {
      if (branchNames.has(branch.name)) {
        report(['projects', i, 'protected_branches', b, 'name'], `branch ${branch.name} is already protected`);
      }
      branchNames.add(branch.name);
      for (const kind of ['allowed_to_push', 'allowed_to_merge', 'allowed_to_unprotect'] as const) {
        branch[kind].forEach((entry, e) => {
          const path = ['projects', i, 'protected_branches', b, kind, e];
          if ('user' in entry) userRef([...path, 'user'], entry.user);
          else if (!groupPaths.has(entry.group.toLowerCase())) report([...path, 'group'], `unknown group ${entry.group}`);
        });
      }
    });
    checkProjectConfig(project, ['projects', i], { user: (name) => usernames.has(name.toLowerCase()), group: (path) => groupPaths.has(path.toLowerCase()) }, report);
    project.registry.forEach((repository, r) => {
      const names = new Set<string>();
      repository.tags.forEach((tag, t) => {
        if (names.has(tag.name)) report(['projects', i, 'registry', r, 'tags', t, 'name'], `duplicate tag ${tag.name}`);
        names.add(tag.name);
      });
    });
  });
  world.projects.forEach((project, i) =>
    project.allowed_agents.forEach((agent, a) => {
      if (!projectPaths.has(agent.config_project.toLowerCase())) {
        report(['projects', i, 'allowed_agents', a, 'config_project'], `unknown project ${agent.config_project}`);
      }
    }),
  );
  checkCredentials(
    [
      ...world.groups.map((group, i) => ({ path: ['groups', i], credentials: group })),
      ...world.projects.map((project, i) => ({ path: ['projects', i], credentials: project })),
    ],
    world.users.flatMap((user, i) => user.tokens.map((token, t) => ({ path: ['users', i, 'tokens', t], value: userTokenValue(token) }))),
    report,
  );
  world.deploy_keys.forEach((key, k) =>
    key.projects.forEach((link, l) => {
      if (!projectPaths.has(link.project.toLowerCase())) {
        report(['deploy_keys', k, 'projects', l, 'project'], `unknown project ${link.project}`);
      }
    }),
  );
  if (world.generate) {
    const generate = world.generate;
    generate.members.forEach((m, j) => userRef(['generate', 'members', j, 'user'], m.user));
    if (generate.parent !== undefined && !groupPaths.has(generate.parent.toLowerCase())) {
      report(['generate', 'parent'], `unknown parent group ${generate.parent}`);
    }
    const taken = generatedGroupPaths(generate).find((path) => groupPaths.has(path.toLowerCase()) || usernames.has(path.toLowerCase()));
    if (taken !== undefined) report(['generate', 'path_prefix'], `namespace ${taken} already exists`);
  }
}

/** Zero-padded to the width of the largest number, so generated paths sort as they count. */
function numbered(prefix: string, n: number, count: number): string {
  return `${prefix}-${String(n).padStart(Math.max(2, String(count).length), '0')}`;
}

/** Full paths of the generated "top-level" groups (under `parent` when there is one). */
function generatedGroupPaths(generate: WorldGenerate): string[] {
  const above = generate.parent === undefined ? '' : `${generate.parent}/`;
  return Array.from({ length: generate.groups }, (_, i) => `${above}${numbered(generate.path_prefix, i + 1, generate.groups)}`);
}

/**
 * The world with the generated groups and projects appended, parsed by the same schemas as declared ones so that
 * they get the same defaults.
 */
function withGenerated<W extends { groups: WorldGroup[]; projects: WorldProject[] }>(world: W, generate: WorldGenerate): W {
  const groups: z.input<typeof groupSchema>[] = [];
  const projects: z.input<typeof projectSchema>[] = [];
  const { visibility } = generate;
  const jobs = Array.from({ length: generate.failed_jobs_per_project }, (_, j) => ({
    name: `test-${j + 1}`,
    stage: 'test',
    status: 'failed' as const,
    // What job_retry's usual `failure_log` patterns (`connection reset`) match: a transient failure.
    log: `Running tests (${j + 1})\nERROR: connection reset by peer\n`,
    failure_reason: 'script_failure',
  }));
  const addProjects = (namespace: string): void => {
    for (let p = 1; p <= generate.projects_per_group; p++) {
      projects.push({
        path: numbered('project', p, generate.projects_per_group),
        namespace,
        visibility,
        archived: p > generate.projects_per_group - generate.archived_projects_per_group,
        pipelines: jobs.length > 0 ? [{ jobs }] : [],
      });
    }
  };
  const { parent } = generate;
  for (const top of generatedGroupPaths(generate)) {
    const path = parent === undefined ? top : top.slice(parent.length + 1);
    groups.push({ path, ...(parent === undefined ? {} : { parent }), visibility, members: generate.members });
    addProjects(top);
    for (let s = 1; s <= generate.subgroups_per_group; s++) {
      const sub = numbered('sub', s, generate.subgroups_per_group);
      groups.push({ path: sub, parent: top, visibility });
      addProjects(`${top}/${sub}`);
    }
  }
  return {
    ...world,
    groups: [...world.groups, ...z.array(groupSchema).parse(groups)],
    projects: [...world.projects, ...z.array(projectSchema).parse(projects)],
  };
}

function checkIids(
  records: { iid: number }[],
  path: (string | number)[],
  what: string,
  report: (path: (string | number)[], message: string) => void,
): void {
  const seen = new Set<number>();
  records.forEach((record, i) => {
    if (seen.has(record.iid)) report([...path, i, 'iid'], `duplicate ${what} iid ${record.iid}`);
    seen.add(record.iid);
  });
}

export interface WorldProblem {
  file: string;
  /** Absent for a world built in code, which has no lines. */
  line?: number;
  col?: number;
  path: string;
  message: string;
}

/** A world file that cannot be used; `message` lists every problem as `FILE:LINE:COL key.path: message`. */
export class WorldError extends Error {
  constructor(readonly problems: WorldProblem[]) {
    super(problems.map(formatWorldProblem).join('\n'));
    this.name = 'WorldError';
  }
}

function formatWorldProblem(problem: WorldProblem): string {
  if (problem.line === undefined) return `${problem.file} ${problem.path}: ${problem.message}`;
  return formatProblem({ ...problem, line: problem.line, col: problem.col ?? 1 });
}

/** Reads and validates a YAML world file. Throws WorldError naming file, line, column and key of each problem. */
export function loadWorld(path: string): ParsedWorld {
  try {
    return parseWorldYaml(readSourceFile(path, 'world file'), path);
  } catch (error) {
    if (error instanceof ConfigError) throw new WorldError([...error.problems]);
    throw error;
  }
}

export function parseWorldYaml(text: string, file = '<world>'): ParsedWorld {
  let source: YamlSource;
  let data: unknown;
  try {
    source = YamlSource.parse(text, file);
    // Bounded like the policy file: nested aliases in a world file must not exhaust memory either.
    data = source.toData(1000) ?? {};
  } catch (error) {
    if (error instanceof ConfigError) throw new WorldError([...error.problems]);
    throw error;
  }
  const result = worldSchema.safeParse(data);
  if (result.success) return result.data;
  throw new WorldError(source.schemaProblems(result.error.issues, worldSchema, data));
}

/** Validates a world given as an object (built in code); problems carry the key path but no line. */
export function parseWorld(world: World | ParsedWorld, file = '<world>'): ParsedWorld {
  const result = worldSchema.safeParse(world);
  if (result.success) return result.data;
  throw new WorldError(
    result.error.issues.map((issue) => ({
      file,
      path: formatPath(issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]] : issue.path),
      message: issue.message,
    })),
  );
}
