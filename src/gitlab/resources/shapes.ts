import { z } from 'zod';
import { shapeOf } from '../transport/shape';
import type { AccessRequest } from '../types/access-requests';
import type { Group } from '../types/groups';
import type { ProjectHook } from '../types/hooks';
import type { Job, JobPipeline } from '../types/jobs';
import type { DeployKey, SshKey } from '../types/keys';
import type { ProjectExportStatus, ProjectImportStatus } from '../types/project-transfer';
import type { Project, ProjectNamespace, SimpleProject } from '../types/projects';
import type { RegistryRepository, RegistryTag, RegistryTagSummary } from '../types/registry';
import type {
  AccessToken,
  DeployToken,
  NewDeployToken,
  NewPersonalAccessToken,
  NewResourceAccessToken,
  ResourceAccessToken,
} from '../types/tokens';
import type {
  AdminUser,
  AdminUserListItem,
  CurrentAdminUser,
  CurrentUser,
  PublicUser,
  UserSummary,
} from '../types/users';
import type { CiVariable } from '../types/variables';

/**
 * The fields of forge records that the policies read (job_retry, registry_cleanup, access_requests, key_rotation,
 * and project selection by globs), checked where the record is read. Only those: every other field passes through
 * unchecked, so a forge adding or dropping one the code never reads changes nothing.
 */

export const jobShape = shapeOf<Job>()({
  id: z.number(),
  name: z.string(),
  stage: z.string(),
  ref: z.string(),
  status: z.string(),
  tag: z.boolean(),
  allow_failure: z.boolean(),
  // The pipeline's project id keys every job_retry decision and the retry request itself.
  pipeline: shapeOf<JobPipeline>()({ id: z.number(), project_id: z.number() }),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});

/** `POST .../jobs/:id/retry`: the new job's id is all that is read. */
export const retriedJobShape = shapeOf<Job>()({ id: z.number() });

export const registryRepositoryShape = shapeOf<RegistryRepository>()({
  id: z.number(),
  path: z.string(),
  project_id: z.number(),
});

export const registryTagSummaryShape = shapeOf<RegistryTagSummary>()({ name: z.string() });

export const registryTagShape = shapeOf<RegistryTag>()({
  name: z.string(),
  created_at: z.string().nullable(),
});

export const accessRequestShape = shapeOf<AccessRequest>()({
  id: z.number(),
  username: z.string(),
  state: z.string(),
  // Part of the decision key: a request asked again is a new decision.
  requested_at: z.string(),
});

const userFields = { id: z.number(), username: z.string() };

export const userShape = shapeOf<PublicUser | AdminUser>()(userFields);
export const userListItemShape = shapeOf<UserSummary | AdminUserListItem>()(userFields);
export const currentUserShape = shapeOf<CurrentUser | CurrentAdminUser>()({
  ...userFields,
  // Decides whether another user's keys and records may be read; a string "false" would be truthy.
  is_admin: z.boolean().optional(),
});

export const sshKeyShape = shapeOf<SshKey>()({
  id: z.number(),
  title: z.string(),
  key: z.string(),
  created_at: z.string(),
  expires_at: z.string().nullish(),
});

/**
 * What key_rotation reads of a key it just created. Checked no further: the key exists by then, and refusing the
 * answer over a field never read would make the policy upload the key again.
 */
export const createdSshKeyShape = shapeOf<SshKey>()({ id: z.number(), expires_at: z.string().nullish() });
export const createdDeployKeyShape = shapeOf<DeployKey>()({ id: z.number() });

export const deployKeyShape = shapeOf<DeployKey>()({
  id: z.number(),
  title: z.string(),
  key: z.string(),
  created_at: z.string(),
  can_push: z.boolean(),
});

/**
 * Project selection: a project is matched on its full path (and its group's), and left out when archived. The
 * simple view has no `archived`; a listing of it filters with `archived=false` instead.
 */
const projectNamespaceShape = shapeOf<ProjectNamespace>()({ full_path: z.string() });

export const simpleProjectShape = shapeOf<SimpleProject>()({
  id: z.number(),
  path_with_namespace: z.string(),
  namespace: projectNamespaceShape,
});

export const projectShape = shapeOf<Project>()({
  id: z.number(),
  path_with_namespace: z.string(),
  archived: z.boolean(),
  namespace: projectNamespaceShape,
});

/** Group globs (`acme/**`) are matched on full paths; `parent_id` places a group in its tree. */
export const groupShape = shapeOf<Group>()({
  id: z.number(),
  full_path: z.string(),
  parent_id: z.number().nullable(),
});

/**
 * Project webhooks (GitLab's public API docs): what a caller checking its own delivery path reads, the hook's address
 * and whether it receives job and pipeline events, and whether the forge has stopped calling it.
 */
export const projectHookShape = shapeOf<ProjectHook>()({
  id: z.number(),
  url: z.string(),
  job_events: z.boolean(),
  pipeline_events: z.boolean(),
  alert_status: z.string(),
  disabled_until: z.string().nullable(),
});

/**
 * Project export and import (GitLab's public API docs): a caller waiting for an export reads its status, one waiting
 * for an import the new project's id, its status and why it failed.
 */
export const projectExportStatusShape = shapeOf<ProjectExportStatus>()({
  id: z.number(),
  export_status: z.string(),
});

export const projectImportStatusShape = shapeOf<ProjectImportStatus>()({
  id: z.number(),
  path_with_namespace: z.string(),
  import_status: z.string(),
  import_error: z.string().nullable(),
});

/**
 * Access tokens (GitLab's public API docs): what deciding a rotation reads, which token, whose, with which scopes, and
 * whether and until when it works.
 */
const accessTokenFields = {
  id: z.number(),
  name: z.string(),
  revoked: z.boolean(),
  active: z.boolean(),
  scopes: z.array(z.string()),
  user_id: z.number(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
};

export const accessTokenShape = shapeOf<AccessToken>()(accessTokenFields);
export const resourceAccessTokenShape = shapeOf<ResourceAccessToken>()({
  ...accessTokenFields,
  access_level: z.number(),
});

/**
 * The answer to a create or a rotation must carry the new value: without it the token exists (and its predecessor is
 * revoked) but nobody holds it, which the caller must learn at once rather than from a `TypeError` later.
 */
export const newPersonalAccessTokenShape = shapeOf<NewPersonalAccessToken>()({
  ...accessTokenFields,
  token: z.string().min(1),
});
export const newResourceAccessTokenShape = shapeOf<NewResourceAccessToken>()({
  ...accessTokenFields,
  access_level: z.number(),
  token: z.string().min(1),
});

const deployTokenFields = {
  id: z.number(),
  name: z.string(),
  username: z.string(),
  expires_at: z.string().nullable(),
  revoked: z.boolean(),
  expired: z.boolean(),
  scopes: z.array(z.string()),
};

export const deployTokenShape = shapeOf<DeployToken>()(deployTokenFields);
export const newDeployTokenShape = shapeOf<NewDeployToken>()({ ...deployTokenFields, token: z.string().min(1) });

/** CI/CD variables: a delivered value is compared with what the forge holds, under its key and environment. */
export const ciVariableShape = shapeOf<CiVariable>()({
  key: z.string(),
  value: z.string().nullable(),
  environment_scope: z.string(),
  masked: z.boolean(),
  protected: z.boolean(),
});
