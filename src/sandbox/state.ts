import { createHash } from 'node:crypto';
import { ApprovalsState } from './approvals-state';
import { SandboxClock } from './clock';
import type { FaultRules } from './faults';
import { parseGpgPublicKey } from './gpg-key';
import { parseSshPublicKey } from './ssh-key';
import { UserWritesState } from './user-writes-state';
import {
  resolveTimestamp,
  type JobStatus,
  type ParsedWorld,
  type WorldJob,
  type WorldLabelEvent,
  type WorldProtectedBranch,
} from './world';

/**
 * The forge's in-memory state. Records use the API's snake_case field names so presenters stay thin. Handlers in
 * `api/` read and change it; tests read it through the typed accessors below or `GET /__sandbox/state`.
 */

export type Visibility = 'private' | 'internal' | 'public';
export type SourceKind = 'group' | 'project';

export interface UserRecord {
  id: number;
  username: string;
  name: string;
  email: string;
  tokens: string[];
  is_admin: boolean;
  state: 'active' | 'blocked';
  two_factor_enabled: boolean;
  external: boolean;
  user_type: string;
  confirmed_at: string | null;
  created_at: string;
  last_sign_in_at: string | null;
  current_sign_in_at: string | null;
  last_activity_on: string | null;
  bio: string;
  location: string | null;
  public_email: string;
  organization: string;
  job_title: string;
  skype: string;
  linkedin: string;
  twitter: string;
  website_url: string;
  note: string | null;
  identities: { provider: string; extern_uid: string }[];
  custom_attributes: Record<string, string>;
  projects_limit: number;
  can_create_group: boolean;
  can_create_project: boolean;
  private_profile: boolean;
  /** The user's personal namespace (ids shared with groups, as on the forge). */
  namespace_id: number;
}

export interface GroupRecord {
  id: number;
  name: string;
  path: string;
  parent_id: number | null;
  description: string;
  visibility: Visibility;
  request_access_enabled: boolean;
  created_at: string;
}

export interface ProjectRecord {
  id: number;
  name: string;
  path: string;
  /** A group id or a user's namespace id. */
  namespace_id: number;
  description: string | null;
  visibility: Visibility;
  request_access_enabled: boolean;
  created_at: string;
  allowed_agents: { id: number; config_project_id: number }[];
}

export interface MemberRecord {
  source: SourceKind;
  source_id: number;
  user_id: number;
  access_level: number;
  created_at: string;
}

export interface AccessRequestRecord {
  source: SourceKind;
  source_id: number;
  user_id: number;
  /**
   * The requester as they were when asking. The forge always lists a request with its user's summary; a test that
   * removes the user behind the sandbox's back still gets a well-formed listing (the race: listed, then deleted).
   */
  username: string;
  user_state: UserRecord['state'];
  requested_at: string;
}

export interface PipelineRecord {
  id: number;
  project_id: number;
  ref: string;
  tag: boolean;
  sha: string;
  /** Set by the world file; dropped as soon as a job of the pipeline changes, then derived from its jobs. */
  status_override: JobStatus | null;
  source: string;
  created_at: string;
  updated_at: string;
  parent_pipeline_id: number | null;
  user_id: number | null;
  commit: { title: string; message: string; author_name: string; author_email: string };
}

export interface ArtifactRecord {
  file_type: string;
  size: number;
  filename: string;
  file_format: string | null;
}

export interface JobRecord {
  id: number;
  kind: 'build' | 'bridge';
  project_id: number;
  pipeline_id: number;
  name: string;
  stage: string;
  ref: string;
  tag: boolean;
  status: JobStatus;
  allow_failure: boolean;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  erased_at: string | null;
  log: string | null;
  retried: boolean;
  user_id: number | null;
  token: string | null;
  failure_reason: string | null;
  artifacts: ArtifactRecord[];
  artifacts_expire_at: string | null;
  tag_list: string[];
  coverage: number | null;
  downstream_pipeline_id: number | null;
}

export interface TagRecord {
  name: string;
  created_at: string | null;
  digest: string;
  total_size: number;
}

export interface RepositoryRecord {
  id: number;
  project_id: number;
  name: string;
  created_at: string;
  status: 'delete_scheduled' | null;
  tags: Map<string, TagRecord>;
}

export interface SshKeyRecord {
  id: number;
  user_id: number;
  title: string;
  key: string;
  normalized: string;
  fingerprint: string;
  fingerprint_sha256: string;
  created_at: string;
  expires_at: string | null;
}

export interface DeployKeyRecord {
  id: number;
  title: string;
  key: string;
  normalized: string;
  fingerprint: string;
  fingerprint_sha256: string;
  created_at: string;
  expires_at: string | null;
  /** Project id → whether the key may push there. */
  projects: Map<number, { can_push: boolean }>;
}

export interface GpgKeyRecord {
  id: number;
  user_id: number;
  /** The armored block as given (trimmed). */
  key: string;
  /** SHA-1 of the decoded body (see gpg-key.ts), 40 upper-case hex digits; unique across users. */
  fingerprint: string;
  primary_keyid: string;
  created_at: string;
}

/** One entry of a protected branch's push/merge/unprotect list: an access level, or a user or group. */
export interface BranchAccessRecord {
  access_level: number | null;
  user_id: number | null;
  group_id: number | null;
}

export interface ProtectedBranchRecord {
  id: number;
  project_id: number;
  /** A branch name or wildcard, matched exactly by the API. */
  name: string;
  push_access_levels: BranchAccessRecord[];
  merge_access_levels: BranchAccessRecord[];
  unprotect_access_levels: BranchAccessRecord[];
  allow_force_push: boolean;
  code_owner_approval_required: boolean;
}

export interface LabelRecord {
  id: number;
  name: string;
  color: string;
  description: string | null;
}

/** Issues, merge requests and epics exist only to carry history events (spec 02 §4 "Label and weight history"). */
export interface IssuableRecord {
  id: number;
  /** `project` for issues and merge requests, `group` for epics. */
  parent_id: number;
  iid: number;
  title: string;
}

export type LabelEventResourceType = 'Issue' | 'Epic' | 'MergeRequest';

export interface LabelEventRecord {
  id: number;
  resource_type: LabelEventResourceType;
  resource_id: number;
  user_id: number;
  label_id: number;
  action: 'add' | 'remove';
  created_at: string;
}

export interface WeightEventRecord {
  id: number;
  issue_id: number;
  user_id: number;
  weight: number;
  created_at: string;
}

export interface BulkDeletionRecord {
  repository_id: number;
  requested_at: string;
  params: Record<string, string | number>;
  applied_at: string | null;
  deleted: string[];
  /** Why the background job deleted nothing (the API had already answered 202). */
  error: string | null;
}

export interface RequestLogEntry {
  time: string;
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  /** Selected headers; credentials appear as `[redacted]`. */
  headers: Record<string, string>;
  /** Parameters sent in the body (form or JSON); credentials redacted. */
  body: Record<string, unknown>;
  /** 0 when the connection was reset by a fault. */
  status: number;
  /** Name of the injected fault, if one answered. */
  fault: string | null;
  duration_ms: number;
}

export interface SandboxSettings {
  /** Delay before an accepted bulk tag deletion or repository deletion takes effect. */
  bulkDeleteDelayMs: number;
  /** Hosted-edition simulation: at most this many tags deleted per bulk call; null = no cap (self-managed). */
  bulkDeleteCap: number | null;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** What builds and bridges of the world file have in common. */
type SeedJob = Pick<
  WorldJob,
  'id' | 'name' | 'stage' | 'status' | 'allow_failure' | 'created_at' | 'started_at' | 'finished_at' | 'retried' | 'user'
> &
  Partial<
    Pick<WorldJob, 'log' | 'token' | 'failure_reason' | 'artifacts' | 'artifacts_expire_at' | 'tag_list' | 'coverage'>
  >;

/** Id assignment: explicit ids from the world are reserved first, the rest count up from 1 skipping them. */
/**
 * Ids of one kind. While the world is seeded, omitted ids fill the gaps around explicit ones; once sealed, every new
 * record gets an id above all earlier ones, as on the forge, whose ids only grow (pollers rely on that).
 */
class IdSequence {
  private readonly used = new Set<number>();
  private cursor = 0;
  private highest = 0;
  private sealed = false;

  reserve(id: number): void {
    this.used.add(id);
    this.highest = Math.max(this.highest, id);
  }

  next(): number {
    if (this.sealed) return ++this.highest;
    do this.cursor += 1;
    while (this.used.has(this.cursor));
    this.reserve(this.cursor);
    return this.cursor;
  }

  seal(): void {
    this.sealed = true;
  }
}

export class SandboxState {
  readonly clock: SandboxClock;
  readonly settings: SandboxSettings;
  registryHost = 'registry.sandbox.test';

  readonly users = new Map<number, UserRecord>();
  readonly groups = new Map<number, GroupRecord>();
  readonly projects = new Map<number, ProjectRecord>();
  readonly members: MemberRecord[] = [];
  readonly accessRequests: AccessRequestRecord[] = [];
  readonly pipelines = new Map<number, PipelineRecord>();
  readonly jobs = new Map<number, JobRecord>();
  readonly repositories = new Map<number, RepositoryRecord>();
  readonly sshKeys = new Map<number, SshKeyRecord>();
  readonly deployKeys = new Map<number, DeployKeyRecord>();
  readonly gpgKeys = new Map<number, GpgKeyRecord>();
  readonly protectedBranches = new Map<number, ProtectedBranchRecord>();
  readonly approvals = new ApprovalsState();
  /** User statuses, preferences and follows (spec 02 §4 "Users"; `user-writes-state.ts`). */
  readonly userWrites = new UserWritesState();
  /** Project id → ids of the groups it is shared with. */
  readonly projectGroupLinks = new Map<number, Set<number>>();
  readonly labels = new Map<number, LabelRecord>();
  readonly issues = new Map<number, IssuableRecord>();
  readonly mergeRequests = new Map<number, IssuableRecord>();
  readonly epics = new Map<number, IssuableRecord>();
  readonly labelEvents = new Map<number, LabelEventRecord>();
  readonly weightEvents = new Map<number, WeightEventRecord>();
  readonly bulkDeletions: BulkDeletionRecord[] = [];
  readonly requestLog: RequestLogEntry[] = [];
  /** Repository id → sandbox-clock time (ms) until which another bulk deletion is refused (spec 01 §8.1). */
  readonly cleanupLeases = new Map<number, number>();

  private readonly ids = {
    user: new IdSequence(),
    namespace: new IdSequence(),
    project: new IdSequence(),
    pipeline: new IdSequence(),
    job: new IdSequence(),
    repository: new IdSequence(),
    key: new IdSequence(),
    gpgKey: new IdSequence(),
    protectedBranch: new IdSequence(),
    label: new IdSequence(),
    issue: new IdSequence(),
    mergeRequest: new IdSequence(),
    epic: new IdSequence(),
    labelEvent: new IdSequence(),
    weightEvent: new IdSequence(),
  };
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The clock's start, against which relative world timestamps (`now-3d`) resolve. */
  private readonly startMs: number;
  private idleWaiters: (() => void)[] = [];
  /** Labels whose color and description a world event set explicitly. */
  private readonly definedLabels = new Set<number>();

  constructor(
    world: ParsedWorld,
    readonly faults: FaultRules,
    overrides: Partial<SandboxSettings> = {},
  ) {
    this.clock = new SandboxClock(world.now ? new Date(world.now) : undefined);
    // The world's own `now` exactly: read back from the running clock it would be a few milliseconds later on a busy
    // machine, and `now-3d` in the file would not be three days before `now`.
    this.startMs = world.now ? Date.parse(world.now) : this.clock.nowMs();
    this.settings = {
      bulkDeleteDelayMs: overrides.bulkDeleteDelayMs ?? world.settings.bulk_delete_delay_ms ?? 50,
      bulkDeleteCap: overrides.bulkDeleteCap ?? world.settings.bulk_delete_cap ?? null,
    };
    this.seed(world);
    for (const sequence of Object.values(this.ids)) sequence.seal();
  }

  // ---- ids and time -------------------------------------------------------------------------------------------

  nextId(kind: keyof SandboxState['ids']): number {
    return this.ids[kind].next();
  }

  nowIso(): string {
    return this.clock.now().toISOString();
  }

  // ---- background work ----------------------------------------------------------------------------------------

  /** Runs `work` after `delayMs` (the forge's asynchronous workers); tracked so close() and whenIdle() see it. */
  schedule(delayMs: number, work: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      work();
      if (this.timers.size === 0) this.releaseIdleWaiters();
    }, delayMs);
    this.timers.add(timer);
  }

  /** Resolves once every scheduled background job (bulk deletions, repository deletions) has run. */
  whenIdle(): Promise<void> {
    if (this.timers.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  cancelBackgroundWork(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.releaseIdleWaiters();
  }

  private releaseIdleWaiters(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  // ---- lookups ------------------------------------------------------------------------------------------------

  userByToken(token: string): UserRecord | undefined {
    for (const user of this.users.values()) if (user.tokens.includes(token)) return user;
    return undefined;
  }

  userByUsername(username: string): UserRecord | undefined {
    const lower = username.toLowerCase();
    for (const user of this.users.values()) if (user.username.toLowerCase() === lower) return user;
    return undefined;
  }

  /** An integer id or a full path, as the API's `:id` (spec 01 §1 convention 2). */
  project(ref: string | number): ProjectRecord | undefined {
    if (typeof ref === 'number' || /^\d+$/.test(ref)) return this.projects.get(Number(ref));
    const lower = ref.toLowerCase();
    for (const project of this.projects.values()) if (this.projectFullPath(project).toLowerCase() === lower) return project;
    return undefined;
  }

  group(ref: string | number): GroupRecord | undefined {
    if (typeof ref === 'number' || /^\d+$/.test(ref)) return this.groups.get(Number(ref));
    const lower = ref.toLowerCase();
    for (const group of this.groups.values()) if (this.groupFullPath(group).toLowerCase() === lower) return group;
    return undefined;
  }

  groupFullPath(group: GroupRecord): string {
    const parent = group.parent_id !== null ? this.groups.get(group.parent_id) : undefined;
    return parent ? `${this.groupFullPath(parent)}/${group.path}` : group.path;
  }

  groupFullName(group: GroupRecord): string {
    const parent = group.parent_id !== null ? this.groups.get(group.parent_id) : undefined;
    return parent ? `${this.groupFullName(parent)} / ${group.name}` : group.name;
  }

  /** The group and its ancestors, nearest first. */
  groupChain(group: GroupRecord): GroupRecord[] {
    const chain: GroupRecord[] = [];
    let current: GroupRecord | undefined = group;
    while (current) {
      chain.push(current);
      current = current.parent_id !== null ? this.groups.get(current.parent_id) : undefined;
    }
    return chain;
  }

  /** The group and every subgroup below it. */
  groupTree(group: GroupRecord): GroupRecord[] {
    const children = [...this.groups.values()].filter((g) => g.parent_id === group.id);
    return [group, ...children.flatMap((child) => this.groupTree(child))];
  }

  namespaceOwnerUser(namespaceId: number): UserRecord | undefined {
    for (const user of this.users.values()) if (user.namespace_id === namespaceId) return user;
    return undefined;
  }

  namespaceFullPath(namespaceId: number): string {
    const group = this.groups.get(namespaceId);
    if (group) return this.groupFullPath(group);
    return this.namespaceOwnerUser(namespaceId)?.username ?? '';
  }

  namespaceName(namespaceId: number): string {
    const group = this.groups.get(namespaceId);
    if (group) return this.groupFullName(group);
    return this.namespaceOwnerUser(namespaceId)?.name ?? '';
  }

  projectFullPath(project: ProjectRecord): string {
    return `${this.namespaceFullPath(project.namespace_id)}/${project.path}`;
  }

  projectFullName(project: ProjectRecord): string {
    return `${this.namespaceName(project.namespace_id)} / ${project.name}`;
  }

  projectsInGroupTree(group: GroupRecord): ProjectRecord[] {
    const ids = new Set(this.groupTree(group).map((g) => g.id));
    return [...this.projects.values()].filter((p) => ids.has(p.namespace_id));
  }

  member(source: SourceKind, sourceId: number, userId: number): MemberRecord | undefined {
    return this.members.find((m) => m.source === source && m.source_id === sourceId && m.user_id === userId);
  }

  /** Highest access level of `user` in the group, inherited from ancestor groups as on the forge. */
  groupAccessLevel(user: UserRecord, group: GroupRecord): number {
    return Math.max(0, ...this.groupChain(group).map((g) => this.member('group', g.id, user.id)?.access_level ?? 0));
  }

  /** Highest access level of `user` in the project: direct, through its group chain, or 50 in a personal project. */
  projectAccessLevel(user: UserRecord, project: ProjectRecord): number {
    const direct = this.member('project', project.id, user.id)?.access_level ?? 0;
    const group = this.groups.get(project.namespace_id);
    const inherited = group ? this.groupAccessLevel(user, group) : user.namespace_id === project.namespace_id ? 50 : 0;
    return Math.max(direct, inherited);
  }

  jobByToken(token: string): JobRecord | undefined {
    for (const job of this.jobs.values()) if (job.token === token) return job;
    return undefined;
  }

  /** Tags of a repository (sorted by name, as the registry lists them). */
  tags(repositoryId: number): TagRecord[] {
    const repository = this.repositories.get(repositoryId);
    if (!repository) return [];
    return [...repository.tags.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  repositoryPath(repository: RepositoryRecord): string {
    const project = this.projects.get(repository.project_id);
    const base = project ? this.projectFullPath(project).toLowerCase() : '';
    return repository.name ? `${base}/${repository.name}` : base;
  }

  /** Derived pipeline status (spec 01 §3 leaves the exact rules open; this follows the forge's composite status). */
  pipelineStatus(pipeline: PipelineRecord): JobStatus {
    if (pipeline.status_override) return pipeline.status_override;
    const latest = [...this.jobs.values()].filter((j) => j.pipeline_id === pipeline.id && !j.retried);
    if (latest.length === 0) return 'created';
    const statuses = latest.map((j) => (j.status === 'failed' && j.allow_failure ? 'success' : j.status));
    const has = (status: JobStatus): boolean => statuses.includes(status);
    if (statuses.every((s) => s === 'skipped')) return 'skipped';
    if (has('running')) return 'running';
    if (has('pending')) return 'pending';
    if (has('created')) return statuses.some((s) => s !== 'created') ? 'running' : 'created';
    if (has('failed')) return 'failed';
    if (has('canceled')) return 'canceled';
    return 'success';
  }

  touchPipeline(pipelineId: number): void {
    const pipeline = this.pipelines.get(pipelineId);
    if (!pipeline) return;
    pipeline.status_override = null;
    pipeline.updated_at = this.nowIso();
  }

  /** Fingerprint already used by a user SSH key or a deploy key (the forge keeps both in one table). */
  keyWithFingerprint(fingerprintSha256: string): SshKeyRecord | DeployKeyRecord | undefined {
    for (const key of this.sshKeys.values()) if (key.fingerprint_sha256 === fingerprintSha256) return key;
    for (const key of this.deployKeys.values()) if (key.fingerprint_sha256 === fingerprintSha256) return key;
    return undefined;
  }

  gpgKeyWithFingerprint(fingerprint: string): GpgKeyRecord | undefined {
    for (const key of this.gpgKeys.values()) if (key.fingerprint === fingerprint) return key;
    return undefined;
  }

  /** A project's protected branch or wildcard by its exact name. */
  protectedBranch(projectId: number, name: string): ProtectedBranchRecord | undefined {
    for (const branch of this.protectedBranches.values()) {
      if (branch.project_id === projectId && branch.name === name) return branch;
    }
    return undefined;
  }

  /** An issue or merge request of a project by iid, or an epic of a group by id. */
  issue(projectId: number, iid: number): IssuableRecord | undefined {
    for (const issue of this.issues.values()) if (issue.parent_id === projectId && issue.iid === iid) return issue;
    return undefined;
  }

  mergeRequest(projectId: number, iid: number): IssuableRecord | undefined {
    for (const mr of this.mergeRequests.values()) if (mr.parent_id === projectId && mr.iid === iid) return mr;
    return undefined;
  }

  // ---- dump ---------------------------------------------------------------------------------------------------

  /** A JSON-friendly snapshot for tests (`GET /__sandbox/state`); tokens are left out. */
  dump(): Record<string, unknown> {
    return {
      now: this.nowIso(),
      settings: { bulk_delete_delay_ms: this.settings.bulkDeleteDelayMs, bulk_delete_cap: this.settings.bulkDeleteCap },
      users: [...this.users.values()].map(({ tokens: _tokens, ...user }) => user),
      groups: [...this.groups.values()].map((g) => ({ ...g, full_path: this.groupFullPath(g) })),
      projects: [...this.projects.values()].map((p) => ({ ...p, path_with_namespace: this.projectFullPath(p) })),
      members: this.members,
      access_requests: this.accessRequests,
      pipelines: [...this.pipelines.values()].map((p) => ({ ...p, status: this.pipelineStatus(p) })),
      jobs: [...this.jobs.values()].map(({ token: _token, ...job }) => job),
      repositories: [...this.repositories.values()].map((r) => ({
        ...r,
        path: this.repositoryPath(r),
        tags: this.tags(r.id),
      })),
      ssh_keys: [...this.sshKeys.values()],
      deploy_keys: [...this.deployKeys.values()].map((k) => ({
        ...k,
        projects: [...k.projects.entries()].map(([project_id, link]) => ({ project_id, ...link })),
      })),
      gpg_keys: [...this.gpgKeys.values()],
      protected_branches: [...this.protectedBranches.values()],
      project_group_links: [...this.projectGroupLinks.entries()].map(([project_id, groups]) => ({
        project_id,
        group_ids: [...groups],
      })),
      labels: [...this.labels.values()],
      issues: [...this.issues.values()],
      merge_requests: [...this.mergeRequests.values()],
      epics: [...this.epics.values()],
      label_events: [...this.labelEvents.values()],
      weight_events: [...this.weightEvents.values()],
      bulk_deletions: this.bulkDeletions,
      cleanup_leases: [...this.cleanupLeases.entries()].map(([repository_id, until]) => ({
        repository_id,
        until: new Date(until).toISOString(),
      })),
    };
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  private seed(world: ParsedWorld): void {
    this.registryHost = world.registry_host;
    const ago = (ms: number): string => new Date(this.startMs - ms).toISOString();
    const iso = (value: string): string => this.time(value);
    const isoOrNull = (value: string | null | undefined, fallback: string | null): string | null =>
      value === undefined ? fallback : value === null ? null : iso(value);

    // Explicit ids first, so generated ones never collide with them.
    world.users.forEach((u) => u.id !== undefined && this.ids.user.reserve(u.id));
    world.groups.forEach((g) => g.id !== undefined && this.ids.namespace.reserve(g.id));
    world.projects.forEach((p) => {
      if (p.id !== undefined) this.ids.project.reserve(p.id);
      p.pipelines.forEach((pipeline) => {
        if (pipeline.id !== undefined) this.ids.pipeline.reserve(pipeline.id);
        [...pipeline.jobs, ...pipeline.bridges].forEach((j) => j.id !== undefined && this.ids.job.reserve(j.id));
      });
      p.registry.forEach((r) => r.id !== undefined && this.ids.repository.reserve(r.id));
    });
    world.users.forEach((u) => u.ssh_keys.forEach((k) => k.id !== undefined && this.ids.key.reserve(k.id)));
    world.deploy_keys.forEach((k) => k.id !== undefined && this.ids.key.reserve(k.id));
    const reserve = (sequence: IdSequence, id: number | undefined): void => {
      if (id !== undefined) sequence.reserve(id);
    };
    world.users.forEach((u) => u.gpg_keys.forEach((k) => reserve(this.ids.gpgKey, k.id)));
    world.groups.forEach((g) =>
      g.epics.forEach((e) => {
        reserve(this.ids.epic, e.id);
        e.label_events.forEach((ev) => reserve(this.ids.labelEvent, ev.id));
      }),
    );
    world.projects.forEach((p) => {
      p.protected_branches.forEach((b) => reserve(this.ids.protectedBranch, b.id));
      p.issues.forEach((i) => {
        reserve(this.ids.issue, i.id);
        i.label_events.forEach((ev) => reserve(this.ids.labelEvent, ev.id));
        i.weight_events.forEach((ev) => reserve(this.ids.weightEvent, ev.id));
      });
      p.merge_requests.forEach((m) => {
        reserve(this.ids.mergeRequest, m.id);
        m.label_events.forEach((ev) => reserve(this.ids.labelEvent, ev.id));
      });
    });

    for (const u of world.users) {
      const created = u.created_at ? iso(u.created_at) : ago(365 * DAY_MS);
      const user: UserRecord = {
        id: u.id ?? this.ids.user.next(),
        username: u.username,
        name: u.name ?? u.username,
        email: u.email ?? `${u.username}@sandbox.test`,
        tokens: u.tokens,
        is_admin: u.admin,
        state: u.state,
        two_factor_enabled: u.two_factor,
        external: u.external,
        user_type: u.user_type ?? (u.bot ? 'project_bot' : 'human'),
        confirmed_at: isoOrNull(u.confirmed_at, created),
        created_at: created,
        last_sign_in_at: isoOrNull(u.last_sign_in_at, null),
        current_sign_in_at: isoOrNull(u.current_sign_in_at, null),
        last_activity_on: u.last_activity_on ?? null,
        bio: u.bio,
        location: u.location,
        public_email: u.public_email,
        organization: u.organization,
        job_title: u.job_title,
        skype: u.skype,
        linkedin: u.linkedin,
        twitter: u.twitter,
        website_url: u.website_url,
        note: u.note,
        identities: u.identities,
        custom_attributes: u.custom_attributes,
        projects_limit: u.projects_limit,
        can_create_group: u.can_create_group,
        can_create_project: u.can_create_project,
        private_profile: u.private_profile,
        namespace_id: 0,
      };
      this.users.set(user.id, user);
      for (const k of u.ssh_keys) {
        const parsed = parseSshPublicKey(k.key);
        if (!parsed) continue; // the schema already rejected it
        const key: SshKeyRecord = {
          id: k.id ?? this.ids.key.next(),
          user_id: user.id,
          title: k.title,
          key: k.key.trim(),
          normalized: parsed.normalized,
          fingerprint: parsed.fingerprintMd5,
          fingerprint_sha256: parsed.fingerprintSha256,
          created_at: k.created_at ? iso(k.created_at) : ago(30 * DAY_MS),
          expires_at: isoOrNull(k.expires_at, null),
        };
        this.sshKeys.set(key.id, key);
      }
      for (const k of u.gpg_keys) {
        const parsed = parseGpgPublicKey(k.key);
        if (typeof parsed === 'string') continue; // the schema already rejected it
        const key: GpgKeyRecord = {
          id: k.id ?? this.ids.gpgKey.next(),
          user_id: user.id,
          key: k.key.trim(),
          fingerprint: parsed.fingerprint,
          primary_keyid: parsed.primaryKeyId,
          created_at: k.created_at ? iso(k.created_at) : ago(30 * DAY_MS),
        };
        this.gpgKeys.set(key.id, key);
      }
    }

    for (const g of world.groups) {
      const parent = g.parent !== undefined ? this.group(g.parent) : undefined;
      const group: GroupRecord = {
        id: g.id ?? this.ids.namespace.next(),
        name: g.name ?? g.path,
        path: g.path,
        parent_id: parent?.id ?? null,
        description: g.description,
        visibility: g.visibility,
        request_access_enabled: g.request_access_enabled,
        created_at: g.created_at ? iso(g.created_at) : ago(400 * DAY_MS),
      };
      this.groups.set(group.id, group);
      this.seedMembership('group', group.id, g.members, g.access_requests, group.created_at);
      for (const e of g.epics) {
        const epic: IssuableRecord = { id: e.id ?? this.ids.epic.next(), parent_id: group.id, iid: e.iid, title: e.title };
        this.epics.set(epic.id, epic);
        this.seedLabelEvents('Epic', epic.id, e.label_events, group.created_at);
      }
    }
    // Personal namespaces take ids after the groups', from the same sequence as on the forge.
    for (const user of this.users.values()) user.namespace_id = this.ids.namespace.next();

    const deferredAgents: { project: ProjectRecord; agents: { id: number; config_project: string }[] }[] = [];
    const deferredBridges: { job: JobRecord; downstream: number | undefined }[] = [];
    for (const p of world.projects) {
      const namespaceId = this.group(p.namespace)?.id ?? this.userByUsername(p.namespace)?.namespace_id ?? 0;
      const project: ProjectRecord = {
        id: p.id ?? this.ids.project.next(),
        name: p.name ?? p.path,
        path: p.path,
        namespace_id: namespaceId,
        description: p.description,
        visibility: p.visibility,
        request_access_enabled: p.request_access_enabled,
        created_at: p.created_at ? iso(p.created_at) : ago(200 * DAY_MS),
        allowed_agents: [],
      };
      this.projects.set(project.id, project);
      deferredAgents.push({ project, agents: p.allowed_agents });
      this.seedMembership('project', project.id, p.members, p.access_requests, project.created_at);
      const links = p.shared_with_groups.map((path) => this.group(path)?.id).filter((gid) => gid !== undefined);
      if (links.length > 0) this.projectGroupLinks.set(project.id, new Set(links));
      for (const b of p.protected_branches) this.seedProtectedBranch(project, b);
      for (const i of p.issues) {
        const issue: IssuableRecord = { id: i.id ?? this.ids.issue.next(), parent_id: project.id, iid: i.iid, title: i.title };
        this.issues.set(issue.id, issue);
        this.seedLabelEvents('Issue', issue.id, i.label_events, project.created_at);
        for (const ev of i.weight_events) {
          const user = this.userByUsername(ev.user);
          if (!user) continue;
          const event: WeightEventRecord = {
            id: ev.id ?? this.ids.weightEvent.next(),
            issue_id: issue.id,
            user_id: user.id,
            weight: ev.weight,
            created_at: ev.created_at ? iso(ev.created_at) : project.created_at,
          };
          this.weightEvents.set(event.id, event);
        }
      }
      for (const m of p.merge_requests) {
        const mr: IssuableRecord = {
          id: m.id ?? this.ids.mergeRequest.next(),
          parent_id: project.id,
          iid: m.iid,
          title: m.title,
        };
        this.mergeRequests.set(mr.id, mr);
        this.seedLabelEvents('MergeRequest', mr.id, m.label_events, project.created_at);
      }

      for (const pl of p.pipelines) {
        const created = pl.created_at ? iso(pl.created_at) : ago(60 * 60 * 1000);
        // Every pipeline on the forge has a user; without one in the world file it is the first administrator.
        const pipelineUser =
          pl.user !== undefined
            ? this.userByUsername(pl.user)
            : ([...this.users.values()].find((u) => u.is_admin) ?? this.users.values().next().value);
        const pipelineId = pl.id ?? this.ids.pipeline.next();
        const sha = pl.sha ?? createHash('sha1').update(`${project.id}:${pipelineId}`).digest('hex');
        const title = pl.commit?.title ?? `Update ${pl.ref}`;
        const pipeline: PipelineRecord = {
          id: pipelineId,
          project_id: project.id,
          ref: pl.ref,
          tag: pl.tag,
          sha,
          status_override: pl.status ?? null,
          source: pl.parent_pipeline !== undefined ? 'parent_pipeline' : pl.source,
          created_at: created,
          updated_at: created,
          parent_pipeline_id: pl.parent_pipeline ?? null,
          user_id: pipelineUser?.id ?? null,
          commit: {
            title,
            message: pl.commit?.message ?? `${title}\n`,
            author_name: pl.commit?.author_name ?? pipelineUser?.name ?? 'Sandbox Author',
            author_email: pl.commit?.author_email ?? pipelineUser?.email ?? 'author@sandbox.test',
          },
        };
        this.pipelines.set(pipeline.id, pipeline);
        for (const j of pl.jobs) this.seedJob(j, 'build', project, pipeline);
        for (const b of pl.bridges) {
          deferredBridges.push({ job: this.seedJob(b, 'bridge', project, pipeline), downstream: b.downstream_pipeline });
        }
      }

      for (const r of p.registry) {
        const repository: RepositoryRecord = {
          id: r.id ?? this.ids.repository.next(),
          project_id: project.id,
          name: r.name,
          created_at: r.created_at ? iso(r.created_at) : ago(90 * DAY_MS),
          status: null,
          tags: new Map(),
        };
        this.repositories.set(repository.id, repository);
        const path = this.repositoryPath(repository);
        for (const t of r.tags) {
          const digest = t.digest ?? `sha256:${createHash('sha256').update(`${path}:${t.name}`).digest('hex')}`;
          repository.tags.set(t.name, {
            name: t.name,
            created_at: t.created_at === null ? null : iso(t.created_at),
            digest,
            total_size: t.total_size ?? 10_000_000 + (parseInt(digest.slice(7, 13), 16) % 190_000_000),
          });
        }
      }
    }
    for (const { project, agents } of deferredAgents) {
      project.allowed_agents = agents.map((a) => ({ id: a.id, config_project_id: this.project(a.config_project)?.id ?? 0 }));
    }
    for (const { job, downstream } of deferredBridges) job.downstream_pipeline_id = downstream ?? null;

    for (const k of world.deploy_keys) {
      const parsed = parseSshPublicKey(k.key);
      if (!parsed) continue;
      const key: DeployKeyRecord = {
        id: k.id ?? this.ids.key.next(),
        title: k.title,
        key: k.key.trim(),
        normalized: parsed.normalized,
        fingerprint: parsed.fingerprintMd5,
        fingerprint_sha256: parsed.fingerprintSha256,
        created_at: k.created_at ? iso(k.created_at) : ago(60 * DAY_MS),
        expires_at: isoOrNull(k.expires_at, null),
        projects: new Map(),
      };
      for (const link of k.projects) {
        const project = this.project(link.project);
        if (project) key.projects.set(project.id, { can_push: link.can_push });
      }
      this.deployKeys.set(key.id, key);
    }
  }

  /** Labels are shared by name across the world (ids in order of first mention). */
  private seedLabelEvents(
    type: LabelEventResourceType,
    resourceId: number,
    events: WorldLabelEvent[],
    fallback: string,
  ): void {
    for (const ev of events) {
      const user = this.userByUsername(ev.user);
      if (!user) continue;
      const spec = typeof ev.label === 'string' ? { name: ev.label } : ev.label;
      let label = [...this.labels.values()].find((l) => l.name === spec.name);
      if (!label) {
        label = { id: this.ids.label.next(), name: spec.name, color: '#6699cc', description: null };
        this.labels.set(label.id, label);
      }
      // The first mention that gives color or description defines them, wherever it is in the file.
      if (typeof ev.label !== 'string' && !this.definedLabels.has(label.id)) {
        this.definedLabels.add(label.id);
        label.color = ev.label.color ?? label.color;
        label.description = ev.label.description ?? label.description;
      }
      const event: LabelEventRecord = {
        id: ev.id ?? this.ids.labelEvent.next(),
        resource_type: type,
        resource_id: resourceId,
        user_id: user.id,
        label_id: label.id,
        action: ev.action,
        created_at: ev.created_at ? this.time(ev.created_at) : fallback,
      };
      this.labelEvents.set(event.id, event);
    }
  }

  private seedProtectedBranch(project: ProjectRecord, b: WorldProtectedBranch): void {
    const entries = (level: number, allowed: WorldProtectedBranch['allowed_to_push']): BranchAccessRecord[] => [
      { access_level: level, user_id: null, group_id: null },
      ...allowed.map((entry) => ({
        access_level: null,
        user_id: 'user' in entry ? (this.userByUsername(entry.user)?.id ?? null) : null,
        group_id: 'group' in entry ? (this.group(entry.group)?.id ?? null) : null,
      })),
    ];
    const branch: ProtectedBranchRecord = {
      id: b.id ?? this.ids.protectedBranch.next(),
      project_id: project.id,
      name: b.name,
      push_access_levels: entries(b.push_access_level, b.allowed_to_push),
      merge_access_levels: entries(b.merge_access_level, b.allowed_to_merge),
      unprotect_access_levels: entries(b.unprotect_access_level, b.allowed_to_unprotect),
      allow_force_push: b.allow_force_push,
      code_owner_approval_required: b.code_owner_approval_required,
    };
    this.protectedBranches.set(branch.id, branch);
  }

  private time(value: string): string {
    return resolveTimestamp(value, this.startMs);
  }

  private seedMembership(
    source: SourceKind,
    sourceId: number,
    members: { user: string; access_level: number; created_at?: string }[],
    requests: { user: string; requested_at?: string }[],
    fallback: string,
  ): void {
    for (const m of members) {
      const user = this.userByUsername(m.user);
      if (!user) continue;
      const createdAt = m.created_at ? this.time(m.created_at) : fallback;
      this.members.push({ source, source_id: sourceId, user_id: user.id, access_level: m.access_level, created_at: createdAt });
    }
    for (const r of requests) {
      const user = this.userByUsername(r.user);
      if (!user) continue;
      const requestedAt = r.requested_at ? this.time(r.requested_at) : this.nowIso();
      this.accessRequests.push({
        source,
        source_id: sourceId,
        user_id: user.id,
        username: user.username,
        user_state: user.state,
        requested_at: requestedAt,
      });
    }
  }

  private seedJob(
    j: SeedJob,
    kind: JobRecord['kind'],
    project: ProjectRecord,
    pipeline: PipelineRecord,
  ): JobRecord {
    const created = j.created_at ? this.time(j.created_at) : pipeline.created_at;
    const ran = ['running', 'success', 'failed', 'canceled'].includes(j.status);
    const finished = ['success', 'failed', 'canceled'].includes(j.status);
    const startedDefault = ran ? new Date(Date.parse(created) + 10_000).toISOString() : null;
    const started = j.started_at === undefined ? startedDefault : j.started_at && this.time(j.started_at);
    const finishedDefault = finished && started ? new Date(Date.parse(started) + 60_000).toISOString() : null;
    const user = j.user !== undefined ? this.userByUsername(j.user) : undefined;
    const job: JobRecord = {
      id: j.id ?? this.ids.job.next(),
      kind,
      project_id: project.id,
      pipeline_id: pipeline.id,
      name: j.name,
      stage: j.stage,
      ref: pipeline.ref,
      tag: pipeline.tag,
      status: j.status,
      allow_failure: j.allow_failure,
      created_at: created,
      started_at: started,
      finished_at:
        j.finished_at === undefined ? finishedDefault : j.finished_at && this.time(j.finished_at),
      erased_at: null,
      log: j.log ?? null,
      retried: j.retried,
      user_id: user?.id ?? pipeline.user_id,
      token: j.token ?? null,
      failure_reason: j.failure_reason ?? (j.status === 'failed' ? 'script_failure' : null),
      artifacts: j.artifacts ?? [],
      artifacts_expire_at: j.artifacts_expire_at ? this.time(j.artifacts_expire_at) : null,
      tag_list: j.tag_list ?? [],
      coverage: j.coverage ?? null,
      downstream_pipeline_id: null,
    };
    this.jobs.set(job.id, job);
    return job;
  }
}
