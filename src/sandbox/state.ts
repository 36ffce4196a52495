import { createHash } from 'node:crypto';
import { MovableClock } from '../clock';
import type { JobStatus } from '../gitlab/types/jobs';
import { AccessOverrides } from './access-overrides';
import { AccessTokensState } from './access-tokens-state';
import { ApprovalsState } from './approvals-state';
import { CiState, type JobRecord, type PipelineRecord } from './ci-state';
import { CiVariablesState } from './ci-variables-state';
import { seedCredentials } from './credentials-seeding';
import { DeployTokensState } from './deploy-tokens-state';
import type { FaultRules } from './faults';
import { HoldRules } from './holds';

/** An API request as watchers see it: method, path (no query), the logged headers and the parsed body. */
export interface WatchedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Readonly<Record<string, unknown>>;
}
import { HooksState } from './hooks-state';
import { integrationsOf } from './integrations-state';
import { SandboxIds, type IdKind } from './ids';
import { NamespacesState, type GroupRecord, type ProjectRecord } from './namespaces-state';
import {
  PeopleState,
  type DeployKeyRecord,
  type GpgKeyRecord,
  type MemberRecord,
  type SourceKind,
  type SshKeyRecord,
  type UserRecord,
} from './people-state';
import { ProtectedBranchesState, type ProtectedBranchRecord } from './protected-branches-state';
import { RegistryState, type RepositoryRecord, type TagRecord } from './registry-state';
import { ResourceEventsState, type IssuableRecord } from './resource-events-state';
import { WorldSeeding } from './seeding';
import { UserWritesState } from './user-writes-state';
import type { ParsedWorld, WorldExportRateLimits } from './world';

/**
 * The forge's in-memory state. Records use the API's snake_case field names so presenters stay thin. Handlers in
 * `api/` read and change it; tests read it through the typed accessors below or `GET /__sandbox/state`. Each area
 * keeps its records and lookups in its own file (people, namespaces, CI, registry, protected branches, resource
 * events); this class wires the areas together, seeds them from the world and answers for all of them.
 */

export type {
  AccessRequestRecord,
  DeployKeyRecord,
  GpgKeyRecord,
  MemberRecord,
  SourceKind,
  SshKeyRecord,
  UserRecord,
} from './people-state';
export type { GroupRecord, ProjectRecord } from './namespaces-state';
export type { ArtifactRecord, JobRecord, PipelineRecord } from './ci-state';
export type { BulkDeletionRecord, RepositoryRecord, TagRecord } from './registry-state';
export type { BranchAccessRecord, ProtectedBranchRecord } from './protected-branches-state';
export type { HookDeliveryRecord, HookRecord } from './hooks-state';
export type { AccessOverrideRecord } from './access-overrides';
export type { IssuableRecord, LabelEventRecord, LabelRecord, WeightEventRecord } from './resource-events-state';

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
  /** Delay of export and import work (groups and projects); null = `bulkDeleteDelayMs`, as before it existed. */
  exportDelayMs: number | null;
  /** Requests per window of the import/export endpoints (`api/group-transfer.ts`, `api/project-transfer.ts`). */
  exportRateLimits: ExportRateLimits;
  /** Size of the incompressible `tree/padding.bin` added to group and project export archives; 0 = none. */
  exportPaddingBytes: number;
  /** Pace of the API's binary answers (downloads); 0 = all at once. */
  downloadBytesPerSecond: number;
}

/**
 * GitLab's application rate limits for import and export ("Rate limits for imports and exports of project and
 * groups"): requests per user (a download: per user and group, or user and project) per window; 0 turns a limit off.
 */
export interface ExportRateLimits {
  groupExport: number;
  groupDownloadExport: number;
  groupImport: number;
  projectExport: number;
  projectDownloadExport: number;
  projectImport: number;
  windowMs: number;
}

/** The forge's defaults: 6 exports, 1 download of one group's or project's export and 6 imports a minute. */
export const DEFAULT_EXPORT_RATE_LIMITS: ExportRateLimits = {
  groupExport: 6,
  groupDownloadExport: 1,
  groupImport: 6,
  projectExport: 6,
  projectDownloadExport: 1,
  projectImport: 6,
  windowMs: 60_000,
};

/** The world file's `export_rate_limits` (snake_case, each optional) as settings; omitted keys are left out. */
export function exportRateLimits(input: WorldExportRateLimits): Partial<ExportRateLimits> {
  const limits: Partial<ExportRateLimits> = {};
  if (input.group_export !== undefined) limits.groupExport = input.group_export;
  if (input.group_download_export !== undefined) limits.groupDownloadExport = input.group_download_export;
  if (input.group_import !== undefined) limits.groupImport = input.group_import;
  if (input.project_export !== undefined) limits.projectExport = input.project_export;
  if (input.project_download_export !== undefined) limits.projectDownloadExport = input.project_download_export;
  if (input.project_import !== undefined) limits.projectImport = input.project_import;
  if (input.window_ms !== undefined) limits.windowMs = input.window_ms;
  return limits;
}

/** The settings as the world file and `/__sandbox/settings` name them. */
export function settingsView(settings: SandboxSettings): Record<string, unknown> {
  const limits = settings.exportRateLimits;
  return {
    bulk_delete_delay_ms: settings.bulkDeleteDelayMs,
    bulk_delete_cap: settings.bulkDeleteCap,
    export_delay_ms: settings.exportDelayMs,
    export_rate_limits: {
      group_export: limits.groupExport,
      group_download_export: limits.groupDownloadExport,
      group_import: limits.groupImport,
      project_export: limits.projectExport,
      project_download_export: limits.projectDownloadExport,
      project_import: limits.projectImport,
      window_ms: limits.windowMs,
    },
    export_padding_bytes: settings.exportPaddingBytes,
    download_bytes_per_second: settings.downloadBytesPerSecond,
  };
}

export class SandboxState {
  readonly clock: MovableClock;
  readonly settings: SandboxSettings;

  readonly people = new PeopleState();
  readonly namespaces = new NamespacesState(this.people);
  readonly ci = new CiState(this.people);
  readonly registry = new RegistryState(this.namespaces);
  readonly branchProtection = new ProtectedBranchesState(this.people, this.namespaces);
  readonly resourceEvents = new ResourceEventsState(this.people);
  readonly approvals = new ApprovalsState();
  /** User statuses, preferences and follows (`user-writes-state.ts`). */
  readonly userWrites = new UserWritesState();
  /** Project webhooks and their deliveries (`hooks-state.ts`); told of every job change by touchPipeline. */
  readonly hooks = new HooksState(this);
  /** Levels forced per user on one project or group (`/__sandbox/access`); see projectAccessLevel. */
  readonly accessOverrides = new AccessOverrides();
  /** Personal, project and group access tokens, the family revocations of reuse detection (`access-tokens-state.ts`). */
  readonly accessTokens = new AccessTokensState(this.people);
  readonly deployTokens = new DeployTokensState();
  readonly ciVariables = new CiVariablesState();
  readonly requestLog: RequestLogEntry[] = [];

  // The areas' records, under the names handlers and tests use.
  readonly users = this.people.users;
  readonly members = this.people.members;
  readonly accessRequests = this.people.accessRequests;
  readonly sshKeys = this.people.sshKeys;
  readonly deployKeys = this.people.deployKeys;
  readonly gpgKeys = this.people.gpgKeys;
  readonly groups = this.namespaces.groups;
  readonly projects = this.namespaces.projects;
  readonly projectGroupLinks = this.namespaces.projectGroupLinks;
  readonly pipelines = this.ci.pipelines;
  readonly jobs = this.ci.jobs;
  /** What runners do with retried jobs (`/__sandbox/runners`). */
  readonly runners = this.ci.runners;
  readonly repositories = this.registry.repositories;
  readonly bulkDeletions = this.registry.bulkDeletions;
  readonly cleanupLeases = this.registry.cleanupLeases;
  readonly protectedBranches = this.branchProtection.branches;
  readonly labels = this.resourceEvents.labels;
  readonly issues = this.resourceEvents.issues;
  readonly mergeRequests = this.resourceEvents.mergeRequests;
  readonly epics = this.resourceEvents.epics;
  readonly labelEvents = this.resourceEvents.labelEvents;
  readonly weightEvents = this.resourceEvents.weightEvents;

  /** Requests held at the door until a test releases them (see holds.ts). */
  readonly holds = new HoldRules();
  /**
   * Called with each API request just before the forge handles it, in the same turn: a test judging the bot (the chaos
   * suite's invariants) sees the state the request meets. Watchers must not change the state.
   */
  readonly watchers = new Set<(request: WatchedRequest) => void>();
  private readonly ids = new SandboxIds();
  private readonly timers = new Set<NodeJS.Timeout>();
  private idleWaiters: (() => void)[] = [];

  /** Hands `request` to every watcher. */
  watch(request: WatchedRequest): void {
    for (const watcher of this.watchers) watcher(request);
  }

  constructor(
    world: ParsedWorld,
    readonly faults: FaultRules,
    overrides: Partial<SandboxSettings> = {},
  ) {
    this.clock = new MovableClock(world.now ? new Date(world.now) : undefined);
    const seeding = new WorldSeeding(world, this.ids, this.clock);
    this.settings = {
      bulkDeleteDelayMs: overrides.bulkDeleteDelayMs ?? world.settings.bulk_delete_delay_ms ?? 50,
      bulkDeleteCap: overrides.bulkDeleteCap ?? world.settings.bulk_delete_cap ?? null,
      exportDelayMs: overrides.exportDelayMs ?? world.settings.export_delay_ms ?? null,
      exportRateLimits: {
        ...DEFAULT_EXPORT_RATE_LIMITS,
        ...exportRateLimits(world.settings.export_rate_limits ?? {}),
        ...overrides.exportRateLimits,
      },
      exportPaddingBytes: overrides.exportPaddingBytes ?? world.settings.export_padding_bytes ?? 0,
      downloadBytesPerSecond: overrides.downloadBytesPerSecond ?? world.settings.download_bytes_per_second ?? 0,
    };
    this.seed(world, seeding);
  }

  get registryHost(): string {
    return this.registry.registryHost;
  }

  // ---- ids and time -------------------------------------------------------------------------------------------

  nextId(kind: IdKind): number {
    return this.ids.next(kind);
  }

  nowIso(): string {
    return this.clock.date().toISOString();
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
    this.hooks.close();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.releaseIdleWaiters();
  }

  private releaseIdleWaiters(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  // ---- lookups, answered by the areas ----------------------------------------------------------------------------

  userByUsername(username: string): UserRecord | undefined {
    return this.people.userByUsername(username);
  }

  member(source: SourceKind, sourceId: number, userId: number): MemberRecord | undefined {
    return this.people.member(source, sourceId, userId);
  }

  keyWithFingerprint(fingerprintSha256: string): SshKeyRecord | DeployKeyRecord | undefined {
    return this.people.keyWithFingerprint(fingerprintSha256);
  }

  gpgKeyWithFingerprint(fingerprint: string): GpgKeyRecord | undefined {
    return this.people.gpgKeyWithFingerprint(fingerprint);
  }

  project(ref: string | number, options: { followRedirects?: boolean } = {}): ProjectRecord | undefined {
    return this.namespaces.project(ref, options);
  }

  group(ref: string | number): GroupRecord | undefined {
    return this.namespaces.group(ref);
  }

  groupFullPath(group: GroupRecord): string {
    return this.namespaces.groupFullPath(group);
  }

  groupFullName(group: GroupRecord): string {
    return this.namespaces.groupFullName(group);
  }

  groupChain(group: GroupRecord): GroupRecord[] {
    return this.namespaces.groupChain(group);
  }

  groupTree(group: GroupRecord): GroupRecord[] {
    return this.namespaces.groupTree(group);
  }

  namespaceOwnerUser(namespaceId: number): UserRecord | undefined {
    return this.namespaces.namespaceOwnerUser(namespaceId);
  }

  namespaceFullPath(namespaceId: number): string {
    return this.namespaces.namespaceFullPath(namespaceId);
  }

  namespaceName(namespaceId: number): string {
    return this.namespaces.namespaceName(namespaceId);
  }

  projectFullPath(project: ProjectRecord): string {
    return this.namespaces.projectFullPath(project);
  }

  projectFullName(project: ProjectRecord): string {
    return this.namespaces.projectFullName(project);
  }

  projectsInGroupTree(group: GroupRecord): ProjectRecord[] {
    return this.namespaces.projectsInGroupTree(group);
  }

  /**
   * The user's role in the group as a member (inherited from ancestors), unless a test forced one for exactly this
   * group; administrators count as members only through such an override (`api/access.ts` grants them the rest).
   */
  groupAccessLevel(user: UserRecord, group: GroupRecord): number {
    return this.accessOverrides.level(user.id, 'group', group.id) ?? this.namespaces.groupAccessLevel(user, group);
  }

  /** As groupAccessLevel, for a project; a group's override does not reach the projects inside it. */
  projectAccessLevel(user: UserRecord, project: ProjectRecord): number {
    return (
      this.accessOverrides.level(user.id, 'project', project.id) ?? this.namespaces.projectAccessLevel(user, project)
    );
  }

  /** The level a test forced for the user on exactly this project or group, if any. */
  accessOverride(user: UserRecord, source: SourceKind, sourceId: number): number | undefined {
    return this.accessOverrides.level(user.id, source, sourceId);
  }

  jobByToken(token: string): JobRecord | undefined {
    return this.ci.jobByToken(token);
  }

  pipelineStatus(pipeline: PipelineRecord): JobStatus {
    return this.ci.pipelineStatus(pipeline);
  }

  touchPipeline(pipelineId: number): void {
    this.ci.touchPipeline(pipelineId, this.nowIso());
    this.hooks.pipelineChanged(pipelineId);
  }

  tags(repositoryId: number): TagRecord[] {
    return this.registry.tags(repositoryId);
  }

  repositoryPath(repository: RepositoryRecord): string {
    return this.registry.repositoryPath(repository);
  }

  protectedBranch(projectId: number, name: string): ProtectedBranchRecord | undefined {
    return this.branchProtection.branch(projectId, name);
  }

  issue(projectId: number, iid: number): IssuableRecord | undefined {
    return this.resourceEvents.issue(projectId, iid);
  }

  mergeRequest(projectId: number, iid: number): IssuableRecord | undefined {
    return this.resourceEvents.mergeRequest(projectId, iid);
  }

  // ---- dump ---------------------------------------------------------------------------------------------------

  /** A JSON-friendly snapshot for tests (`GET /__sandbox/state`); tokens are left out. */
  dump(): Record<string, unknown> {
    return {
      now: this.nowIso(),
      settings: settingsView(this.settings),
      users: [...this.users.values()],
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
      ...this.hooks.dump(),
      access_overrides: this.accessOverrides.list(),
      access_tokens: this.accessTokens.views(),
      token_family_revocations: this.accessTokens.familyRevocations,
      deploy_tokens: this.deployTokens.views(),
      ci_variables: [...this.ciVariables.variables.values()].map(({ value, ...variable }) => ({
        ...variable,
        value_sha256: sha256(value),
      })),
    };
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  /**
   * Each area seeds its own slice of the world. Users come first, then groups and projects, as everything else refers
   * to them; every kind of id belongs to one area, so the order of the rest leaves the ids as they are.
   */
  private seed(world: ParsedWorld, seeding: WorldSeeding): void {
    this.people.seedUsers(world, seeding);
    const seeded = this.namespaces.seed(world, seeding);
    this.people.seedAccess(world, { ...seeded, project: (ref) => this.namespaces.project(ref) }, seeding);
    const places = [
      ...seeded.groups.map((g) => ({ source: 'group' as const, ...g })),
      ...seeded.projects.map((p) => ({ source: 'project' as const, ...p })),
    ];
    seedCredentials(world, places, this, seeding);
    this.branchProtection.seed(seeded.projects, seeding);
    this.approvals.seed(seeded.projects, {
      user: (username) => this.people.userByUsername(username)?.id,
      group: (path) => this.namespaces.group(path)?.id,
      branch: (projectId, name) => this.branchProtection.branch(projectId, name)?.id,
    });
    integrationsOf(this).seed(seeded.projects, seeding);
    this.resourceEvents.seed(seeded, seeding);
    this.ci.seed(seeded.projects, seeding);
    this.hooks.seed(world, seeded.projects, seeding);
    this.registry.seed(world, seeded.projects, seeding);
    this.ids.seal();
  }
}

/** How the state's dump names a secret it must not show: a test compares values by their hash. */
function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
