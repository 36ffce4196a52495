import { z } from 'zod';
import { PROJECT_HOOK_EVENT_FLAGS, type ProjectHookEventFlag } from '../../gitlab/types/hooks';
import { USER_STATES } from '../../gitlab/types/common';
import { JOB_STATUSES } from '../../gitlab/types/jobs';
import {
  DEFAULT_PROTECTED_BRANCH_ACCESS_LEVEL,
  PROTECTED_BRANCH_ACCESS_LEVEL_NAMES,
  PROTECTED_BRANCH_ACCESS_LEVEL_VALUES,
  PROTECTED_BRANCH_ACCESS_LEVELS,
} from '../../gitlab/types/protected-branches';
import { RESOURCE_LABEL_EVENT_ACTIONS } from '../../gitlab/types/resource-events';
import { parseGpgPublicKey } from '../gpg-key';
import { parseSshPublicKey } from '../ssh-key';
import { placeCredentials, userToken } from './credentials';
import { accessLevel, date, id, pathSegment, timestamp, visibility } from './fields';
import { approvalRuleSchema, approvalSettingsSchema, integrationSchema } from './project-config';

/**
 * The parts of a world file: users, groups, projects (with their pipelines, registry, protected branches, hooks,
 * approvals and integrations), deploy keys and the sandbox's settings. Strict: an unknown key is an error, so a typo
 * never silently seeds nothing. Omitted ids and timestamps are filled in when the world is seeded.
 */

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

export const userSchema = z.strictObject({
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

export const memberSchema = z.strictObject({
  user: z.string(),
  access_level: accessLevel,
  created_at: timestamp.optional(),
});
const accessRequestSchema = z.strictObject({ user: z.string(), requested_at: timestamp.optional() });

export const groupSchema = z.strictObject({
  id: id.optional(),
  path: pathSegment,
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
  sha: z
    .string()
    .regex(/^[0-9a-f]{40}$/, { message: 'must be a 40-hex commit sha' })
    .optional(),
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
  digest: z
    .string()
    .regex(/^sha256:[0-9a-f]{64}$/, { message: 'must be sha256:<64 hex>' })
    .optional(),
  total_size: z.number().int().nonnegative().optional(),
});

const repositorySchema = z.strictObject({
  id: id.optional(),
  /** Empty for the project's root repository. */
  name: z.string().default(''),
  created_at: timestamp.optional(),
  tags: z.array(tagSchema).default([]),
});

export const projectSchema = z.strictObject({
  id: id.optional(),
  path: pathSegment,
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
  /** Merge request approval settings; omitted ones keep the forge's defaults (project-config.ts). */
  approval_settings: approvalSettingsSchema.default({}),
  approval_rules: z.array(approvalRuleSchema).default([]),
  /** Integrations set on the project, each once. */
  integrations: z.array(integrationSchema).default([]),
  ...placeCredentials,
});

export const deployKeySchema = z.strictObject({
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
export const exportPaddingBytes = z
  .number()
  .int()
  .nonnegative()
  .max(256 * 1024 * 1024);

/** The sandbox's settings at start (`POST /__sandbox/settings` changes most of them later). */
export const settingsSchema = z.strictObject({
  bulk_delete_delay_ms: z.number().int().nonnegative().optional(),
  bulk_delete_cap: z.number().int().positive().nullable().optional(),
  /** How long a webhook delivery may take; the forge's `webhook_timeout` is 10 s. */
  hook_timeout_ms: z.number().int().positive().optional(),
  /** Delay of export and import work (groups and projects); `bulk_delete_delay_ms` when omitted or null. */
  export_delay_ms: z.number().int().nonnegative().nullable().optional(),
  export_rate_limits: exportRateLimitsSchema.optional(),
  export_padding_bytes: exportPaddingBytes.optional(),
  download_bytes_per_second: z.number().int().nonnegative().optional(),
});

// From the part schemas rather than the whole world's output: the world's generation builds these too.
export type WorldUser = z.output<typeof userSchema>;
export type WorldGroup = z.output<typeof groupSchema>;
export type WorldProject = z.output<typeof projectSchema>;
export type WorldDeployKey = z.output<typeof deployKeySchema>;
export type WorldPipeline = z.output<typeof pipelineSchema>;
export type WorldJob = z.output<typeof jobSchema>;
export type WorldRepository = WorldProject['registry'][number];
export type WorldLabelEvent = z.output<typeof labelEventSchema>;
export type WorldWeightEvent = z.output<typeof weightEventSchema>;
export type WorldProtectedBranch = WorldProject['protected_branches'][number];
export type WorldHook = WorldProject['hooks'][number];
