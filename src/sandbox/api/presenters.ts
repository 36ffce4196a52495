import { createHash } from 'node:crypto';
import { ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import { PROTECTED_BRANCH_ACCESS_LEVELS, type ProtectedBranchAccessLevel } from '../../gitlab/types/protected-branches';
import type {
  AccessRequestRecord,
  BranchAccessRecord,
  DeployKeyRecord,
  GpgKeyRecord,
  GroupRecord,
  JobRecord,
  LabelEventRecord,
  MemberRecord,
  PipelineRecord,
  ProtectedBranchRecord,
  ProjectRecord,
  RepositoryRecord,
  SandboxState,
  SshKeyRecord,
  TagRecord,
  UserRecord,
  WeightEventRecord,
} from '../state';

/** The forge's `access_level_description` of each protected branch access level. */
const BRANCH_ACCESS_DESCRIPTIONS: Record<number, string> = {
  [PROTECTED_BRANCH_ACCESS_LEVELS.no_access]: 'No one',
  [PROTECTED_BRANCH_ACCESS_LEVELS.developer]: 'Developers + Maintainers',
  [PROTECTED_BRANCH_ACCESS_LEVELS.maintainer]: 'Maintainers',
  [PROTECTED_BRANCH_ACCESS_LEVELS.admin]: 'Admins',
} satisfies Record<ProtectedBranchAccessLevel, string>;

/**
 * Turns records into the API's JSON, field by field as the spec's tables list them (spec 01 §2, spec 02 §2).
 * Addresses (web_url, Link) use the address the client called, so the answers point back at the sandbox.
 */
export class Presenter {
  constructor(
    private readonly state: SandboxState,
    private readonly baseUrl: string,
  ) {}

  // ---- users --------------------------------------------------------------------------------------------------

  userSummary(user: UserRecord): Record<string, unknown> {
    return {
      id: user.id,
      username: user.username,
      name: user.name,
      state: user.state,
      avatar_url: `https://www.gravatar.com/avatar/${md5(user.email.toLowerCase())}?s=80&d=identicon`,
      web_url: `${this.baseUrl}/${user.username}`,
    };
  }

  /** The user summary embedded in jobs (spec 01 §2 "User summary"). */
  jobUser(user: UserRecord): Record<string, unknown> {
    return {
      ...this.userSummary(user),
      created_at: user.created_at,
      bio: user.bio,
      location: user.location,
      public_email: user.public_email,
      skype: user.skype,
      linkedin: user.linkedin,
      twitter: user.twitter,
      website_url: user.website_url,
      organization: user.organization,
    };
  }

  /** `GET /users/:id` for a normal caller. */
  userPublic(user: UserRecord): Record<string, unknown> {
    return {
      ...this.userSummary(user),
      created_at: user.created_at,
      ...profileFields(user),
      followers: this.state.userWrites.followers(user.id).length,
      following: this.state.userWrites.following(user.id).length,
    };
  }

  /** The administrator view of the user list (spec 02 §2 "User (administrator view, list and single)"). */
  userAdminListItem(user: UserRecord, withCustomAttributes = false): Record<string, unknown> {
    const signedIn = user.current_sign_in_at !== null;
    return {
      ...this.userSummary(user),
      email: user.email,
      created_at: user.created_at,
      is_admin: user.is_admin,
      ...profileFields(user),
      last_sign_in_at: user.last_sign_in_at,
      confirmed_at: user.confirmed_at,
      theme_id: 1,
      last_activity_on: user.last_activity_on,
      color_scheme_id: 1,
      projects_limit: user.projects_limit,
      current_sign_in_at: user.current_sign_in_at,
      note: user.note,
      identities: user.identities,
      can_create_group: user.can_create_group,
      can_create_project: user.can_create_project,
      two_factor_enabled: user.two_factor_enabled,
      external: user.external,
      private_profile: user.private_profile,
      current_sign_in_ip: signedIn ? '127.0.0.1' : null,
      last_sign_in_ip: user.last_sign_in_at !== null ? '127.0.0.1' : null,
      ...(withCustomAttributes ? { custom_attributes: customAttributes(user) } : {}),
    };
  }

  userAdminSingle(user: UserRecord, withCustomAttributes = false): Record<string, unknown> {
    return {
      ...this.userPublic(user),
      ...this.userAdminListItem(user, withCustomAttributes),
      commit_email: user.email,
      sign_in_count: user.last_sign_in_at !== null ? 1 : 0,
    };
  }

  /** `GET /user` (spec 02 §2 "Current user"). */
  currentUser(user: UserRecord): Record<string, unknown> {
    const view: Record<string, unknown> = {
      ...this.userPublic(user),
      email: user.email,
      public_email: user.public_email,
      last_sign_in_at: user.last_sign_in_at,
      confirmed_at: user.confirmed_at,
      theme_id: 1,
      last_activity_on: user.last_activity_on,
      color_scheme_id: 1,
      projects_limit: user.projects_limit,
      current_sign_in_at: user.current_sign_in_at,
      identities: user.identities,
      can_create_group: user.can_create_group,
      can_create_project: user.can_create_project,
      two_factor_enabled: user.two_factor_enabled,
      external: user.external,
      private_profile: user.private_profile,
    };
    if (!user.is_admin) return view;
    return {
      ...view,
      is_admin: true,
      job_title: user.job_title,
      commit_email: user.email,
      current_sign_in_ip: user.current_sign_in_at !== null ? '127.0.0.1' : null,
      last_sign_in_ip: user.last_sign_in_at !== null ? '127.0.0.1' : null,
    };
  }

  // ---- projects and namespaces --------------------------------------------------------------------------------

  projectSummary(project: ProjectRecord): Record<string, unknown> {
    return {
      id: project.id,
      description: project.description,
      name: project.name,
      name_with_namespace: this.state.projectFullName(project),
      path: project.path,
      path_with_namespace: this.state.projectFullPath(project),
      created_at: project.created_at,
    };
  }

  groupNamespace(group: GroupRecord, showMemberCount: boolean): Record<string, unknown> {
    const fullPath = this.state.groupFullPath(group);
    return {
      id: group.id,
      name: group.name,
      path: group.path,
      kind: 'group',
      full_path: fullPath,
      parent_id: group.parent_id,
      avatar_url: null,
      web_url: `${this.baseUrl}/groups/${fullPath}`,
      ...(showMemberCount ? { members_count_with_descendants: this.groupMemberIds(group).size } : {}),
      billable_members_count: this.billableMembers(group),
      plan: 'default',
      trial_ends_on: null,
      trial: false,
    };
  }

  userNamespace(user: UserRecord): Record<string, unknown> {
    return {
      id: user.namespace_id,
      name: user.username,
      path: user.username,
      kind: 'user',
      full_path: user.username,
      parent_id: null,
      avatar_url: null,
      web_url: `${this.baseUrl}/${user.username}`,
      billable_members_count: 1,
      plan: 'default',
      trial_ends_on: null,
      trial: false,
    };
  }

  // ---- projects and groups (GitLab's public API docs: Projects and Groups API) -------------------------------------

  /** The namespace embedded in a project (the forge's `NamespaceBasic`). */
  projectNamespace(namespaceId: number): Record<string, unknown> {
    const group = this.state.groups.get(namespaceId);
    const fullPath = this.state.namespaceFullPath(namespaceId);
    return {
      id: namespaceId,
      name: group ? group.name : fullPath,
      path: group ? group.path : fullPath,
      kind: group ? 'group' : 'user',
      full_path: fullPath,
      parent_id: group ? group.parent_id : null,
      avatar_url: null,
      web_url: group ? `${this.baseUrl}/groups/${fullPath}` : `${this.baseUrl}/${fullPath}`,
    };
  }

  /** `simple=true` (the forge's `BasicProjectDetails`): no `archived`, no `visibility`. */
  simpleProject(project: ProjectRecord): Record<string, unknown> {
    const fullPath = this.state.projectFullPath(project);
    return {
      ...this.projectSummary(project),
      default_branch: project.default_branch,
      tag_list: [],
      topics: [],
      ssh_url_to_repo: `git@${new URL(this.baseUrl).hostname}:${fullPath}.git`,
      http_url_to_repo: `${this.baseUrl}/${fullPath}.git`,
      web_url: `${this.baseUrl}/${fullPath}`,
      // The sandbox keeps no repository content, so no README either.
      readme_url: null,
      forks_count: 0,
      avatar_url: null,
      star_count: 0,
      last_activity_at: project.last_activity_at,
      namespace: this.projectNamespace(project.namespace_id),
    };
  }

  /** A project as `viewer` sees it without `simple` (the forge's `ProjectWithAccess`). */
  project(project: ProjectRecord, viewer: UserRecord): Record<string, unknown> {
    const owner = this.state.groups.has(project.namespace_id) ? undefined : this.state.namespaceOwnerUser(project.namespace_id);
    const group = this.state.groups.get(project.namespace_id);
    const projectAccess = this.state.member('project', project.id, viewer.id)?.access_level;
    const groupAccess = group ? this.state.groupAccessLevel(viewer, group) : 0;
    const permission = (level: number | undefined) => (level ? { access_level: level, notification_level: 3 } : null);
    return {
      ...this.simpleProject(project),
      visibility: project.visibility,
      archived: project.archived,
      ...(owner ? { owner: this.userSummary(owner) } : {}),
      empty_repo: false,
      request_access_enabled: project.request_access_enabled,
      shared_with_groups: [...(this.state.projectGroupLinks.get(project.id) ?? [])]
        .map((id) => this.state.groups.get(id))
        .filter((g): g is GroupRecord => g !== undefined)
        // A world file's share names no role; the sandbox shows it as developer.
        .map((g) => ({
          group_id: g.id,
          group_name: g.name,
          group_full_path: this.state.groupFullPath(g),
          group_access_level: ACCESS_LEVELS.developer,
          expires_at: null,
        })),
      permissions: { project_access: permission(projectAccess), group_access: permission(groupAccess) },
    };
  }

  /** A group in lists and as the base of the detail (the forge's `Entities::Group`). */
  group(group: GroupRecord): Record<string, unknown> {
    const fullPath = this.state.groupFullPath(group);
    return {
      id: group.id,
      web_url: `${this.baseUrl}/groups/${fullPath}`,
      name: group.name,
      path: group.path,
      description: group.description,
      visibility: group.visibility,
      lfs_enabled: true,
      avatar_url: null,
      request_access_enabled: group.request_access_enabled,
      full_name: this.state.groupFullName(group),
      full_path: fullPath,
      created_at: group.created_at,
      parent_id: group.parent_id,
    };
  }

  private groupMemberIds(group: GroupRecord): Set<number> {
    const groupIds = new Set(this.state.groupTree(group).map((g) => g.id));
    const projectIds = new Set(this.state.projectsInGroupTree(group).map((p) => p.id));
    return new Set(
      this.state.members
        .filter((m) => (m.source === 'group' ? groupIds.has(m.source_id) : projectIds.has(m.source_id)))
        .map((m) => m.user_id),
    );
  }

  /** All members minus blocked users and bots (spec 02 §4: "all users minus blocked users"). */
  private billableMembers(group: GroupRecord): number {
    return [...this.groupMemberIds(group)].filter((id) => {
      const user = this.state.users.get(id);
      return user !== undefined && user.state === 'active' && user.user_type === 'human';
    }).length;
  }

  // ---- jobs ---------------------------------------------------------------------------------------------------

  job(job: JobRecord): Record<string, unknown> {
    if (job.kind === 'bridge') return this.bridge(job);
    const archive = job.artifacts.find((a) => a.file_type === 'archive');
    return {
      ...this.jobCommon(job),
      pipeline: this.pipelineBrief(job.pipeline_id),
      artifacts: job.artifacts,
      ...(archive ? { artifacts_file: { filename: archive.filename, size: archive.size } } : {}),
      ...(job.artifacts_expire_at !== null ? { artifacts_expire_at: job.artifacts_expire_at } : {}),
      tag_list: job.tag_list,
      runner: null,
    };
  }

  bridge(job: JobRecord): Record<string, unknown> {
    const downstream = job.downstream_pipeline_id !== null ? this.state.pipelines.get(job.downstream_pipeline_id) : undefined;
    return {
      ...this.jobCommon(job),
      pipeline: this.pipelineFull(job.pipeline_id),
      downstream_pipeline: downstream
        ? {
            id: downstream.id,
            sha: downstream.sha,
            ref: downstream.ref,
            status: this.state.pipelineStatus(downstream),
            created_at: downstream.created_at,
            updated_at: downstream.updated_at,
            web_url: this.pipelineWebUrl(downstream),
          }
        : null,
    };
  }

  private jobCommon(job: JobRecord): Record<string, unknown> {
    const project = this.state.projects.get(job.project_id);
    const pipeline = this.state.pipelines.get(job.pipeline_id);
    const user = job.user_id !== null ? this.state.users.get(job.user_id) : undefined;
    const now = this.state.clock.now();
    const started = job.started_at !== null ? Date.parse(job.started_at) : null;
    const finished = job.finished_at !== null ? Date.parse(job.finished_at) : null;
    const created = Date.parse(job.created_at);
    const duration = started === null ? null : ((finished ?? (job.status === 'running' ? now : started)) - started) / 1000;
    const queued = started !== null ? (started - created) / 1000 : job.status === 'pending' ? (now - created) / 1000 : null;
    return {
      id: job.id,
      status: job.status,
      stage: job.stage,
      name: job.name,
      ref: job.ref,
      tag: job.tag,
      coverage: job.coverage,
      allow_failure: job.allow_failure,
      created_at: job.created_at,
      started_at: job.started_at,
      finished_at: job.finished_at,
      erased_at: job.erased_at,
      duration,
      queued_duration: queued,
      user: user ? this.jobUser(user) : null,
      commit: pipeline
        ? {
            id: pipeline.sha,
            short_id: pipeline.sha.slice(0, 8),
            created_at: pipeline.created_at,
            title: pipeline.commit.title,
            message: pipeline.commit.message,
            author_name: pipeline.commit.author_name,
            author_email: pipeline.commit.author_email,
          }
        : null,
      ...(job.status === 'failed' && job.failure_reason !== null ? { failure_reason: job.failure_reason } : {}),
      web_url: project ? `${this.baseUrl}/${this.state.projectFullPath(project)}/-/jobs/${job.id}` : null,
      archived: false,
    };
  }

  private pipelineBrief(pipelineId: number): Record<string, unknown> | null {
    const pipeline = this.state.pipelines.get(pipelineId);
    if (!pipeline) return null;
    return {
      id: pipeline.id,
      project_id: pipeline.project_id,
      ref: pipeline.ref,
      sha: pipeline.sha,
      status: this.state.pipelineStatus(pipeline),
    };
  }

  pipelineFull(pipelineId: number): Record<string, unknown> | null {
    const pipeline = this.state.pipelines.get(pipelineId);
    if (!pipeline) return null;
    return {
      ...this.pipelineBrief(pipelineId),
      created_at: pipeline.created_at,
      updated_at: pipeline.updated_at,
      web_url: this.pipelineWebUrl(pipeline),
    };
  }

  private pipelineWebUrl(pipeline: PipelineRecord): string | null {
    const project = this.state.projects.get(pipeline.project_id);
    return project ? `${this.baseUrl}/${this.state.projectFullPath(project)}/-/pipelines/${pipeline.id}` : null;
  }

  // ---- registry -----------------------------------------------------------------------------------------------

  repository(repository: RepositoryRecord, options: { tags?: boolean; tagsCount?: boolean } = {}): Record<string, unknown> {
    const path = this.state.repositoryPath(repository);
    return {
      id: repository.id,
      name: repository.name,
      path,
      project_id: repository.project_id,
      location: `${this.state.registryHost}/${path}`,
      created_at: repository.created_at,
      cleanup_policy_started_at: null,
      status: repository.status,
      ...(options.tagsCount ? { tags_count: repository.tags.size } : {}),
      ...(options.tags ? { tags: this.state.tags(repository.id).map((t) => this.tag(repository, t)) } : {}),
    };
  }

  tag(repository: RepositoryRecord, tag: TagRecord): Record<string, unknown> {
    const path = `${this.state.repositoryPath(repository)}:${tag.name}`;
    return { name: tag.name, path, location: `${this.state.registryHost}/${path}` };
  }

  tagDetail(repository: RepositoryRecord, tag: TagRecord): Record<string, unknown> {
    const revision = createHash('sha256').update(tag.digest).digest('hex');
    return {
      ...this.tag(repository, tag),
      revision,
      short_revision: revision.slice(0, 9),
      digest: tag.digest,
      created_at: tag.created_at,
      total_size: tag.total_size,
    };
  }

  // ---- keys ---------------------------------------------------------------------------------------------------

  sshKey(key: SshKeyRecord | DeployKeyRecord): Record<string, unknown> {
    return { id: key.id, title: key.title, created_at: key.created_at, expires_at: key.expires_at, key: key.key };
  }

  deployKeyInProject(key: DeployKeyRecord, projectId: number): Record<string, unknown> {
    return {
      ...this.sshKey(key),
      fingerprint: key.fingerprint,
      fingerprint_sha256: key.fingerprint_sha256,
      can_push: key.projects.get(projectId)?.can_push ?? false,
    };
  }

  /** The instance-wide list has no `can_push` (spec 02 §2 "Deploy key"); it names the projects instead. */
  deployKeyInstance(key: DeployKeyRecord): Record<string, unknown> {
    const linked = (canPush: boolean): Record<string, unknown>[] =>
      [...key.projects.entries()]
        .filter(([, link]) => link.can_push === canPush)
        .map(([id]) => this.state.projects.get(id))
        .filter((p): p is ProjectRecord => p !== undefined)
        .map((p) => this.projectSummary(p));
    return {
      ...this.sshKey(key),
      fingerprint: key.fingerprint,
      fingerprint_sha256: key.fingerprint_sha256,
      projects_with_write_access: linked(true),
      projects_with_readonly_access: linked(false),
    };
  }

  /** Spec 02 §2 "GPG key": only `id`, `key`, `created_at`. */
  gpgKey(key: GpgKeyRecord): Record<string, unknown> {
    return { id: key.id, key: key.key, created_at: key.created_at };
  }

  // ---- protected branches -------------------------------------------------------------------------------------

  protectedBranch(branch: ProtectedBranchRecord): Record<string, unknown> {
    return {
      id: branch.id,
      name: branch.name,
      push_access_levels: branch.push_access_levels.map((a) => this.branchAccess(a)),
      merge_access_levels: branch.merge_access_levels.map((a) => this.branchAccess(a)),
      unprotect_access_levels: branch.unprotect_access_levels.map((a) => this.branchAccess(a)),
      allow_force_push: branch.allow_force_push,
      code_owner_approval_required: branch.code_owner_approval_required,
    };
  }

  /** A user entry is described by the user's name, a group entry by the group's name, as on the forge. */
  private branchAccess(access: BranchAccessRecord): Record<string, unknown> {
    const user = access.user_id !== null ? this.state.users.get(access.user_id) : undefined;
    const group = access.group_id !== null ? this.state.groups.get(access.group_id) : undefined;
    const description =
      user?.name ?? group?.name ?? (access.access_level !== null ? BRANCH_ACCESS_DESCRIPTIONS[access.access_level] : '');
    return {
      access_level: access.access_level,
      access_level_description: description,
      user_id: access.user_id,
      group_id: access.group_id,
    };
  }

  // ---- history events -----------------------------------------------------------------------------------------

  labelEvent(event: LabelEventRecord): Record<string, unknown> {
    const user = this.state.users.get(event.user_id);
    const label = this.state.labels.get(event.label_id);
    return {
      id: event.id,
      user: user ? this.userSummary(user) : null,
      created_at: event.created_at,
      resource_type: event.resource_type,
      resource_id: event.resource_id,
      label: label
        ? { id: label.id, name: label.name, color: label.color, description: label.description }
        : null,
      action: event.action,
    };
  }

  weightEvent(event: WeightEventRecord): Record<string, unknown> {
    const user = this.state.users.get(event.user_id);
    return {
      id: event.id,
      user: user ? this.userSummary(user) : null,
      created_at: event.created_at,
      issue_id: event.issue_id,
      weight: event.weight,
    };
  }

  // ---- access requests ----------------------------------------------------------------------------------------

  accessRequest(request: AccessRequestRecord): Record<string, unknown> {
    const user = this.state.users.get(request.user_id);
    return {
      ...(user ? this.userSummary(user) : { id: request.user_id, username: request.username, state: request.user_state }),
      created_at: request.requested_at,
      requested_at: request.requested_at,
    };
  }

  /** The forge's `Member` entity: the user, their role there and the membership's dates. */
  member(user: UserRecord, member: MemberRecord): Record<string, unknown> {
    return {
      ...this.userSummary(user),
      created_at: member.created_at,
      access_level: member.access_level,
      expires_at: member.expires_at ?? null,
      membership_state: 'active',
    };
  }
}

function md5(text: string): string {
  return createHash('md5').update(text).digest('hex');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function customAttributes(user: UserRecord): { key: string; value: string }[] {
  return Object.entries(user.custom_attributes).map(([key, value]) => ({ key, value }));
}

/** The profile a user shows to everyone, the same in the public and the administrator views (spec 02 §2). */
function profileFields(user: UserRecord): Record<string, unknown> {
  return {
    bio: user.bio,
    bio_html: user.bio ? `<p dir="auto">${escapeHtml(user.bio)}</p>` : '',
    bot: user.user_type !== 'human',
    location: user.location,
    public_email: user.public_email,
    skype: user.skype,
    linkedin: user.linkedin,
    twitter: user.twitter,
    website_url: user.website_url,
    organization: user.organization,
    job_title: user.job_title,
  };
}
