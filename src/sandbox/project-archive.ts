import { z } from 'zod';
import { VISIBILITIES, type Visibility } from '../gitlab/types/common';
import { JOB_STATUSES } from '../gitlab/types/jobs';
import { ARCHIVE_VERSION, gunzipTar, gzipTar, padding, type TarEntry } from './archive';
import type { BranchAccessRecord, JobRecord, PipelineRecord, ProjectRecord, SandboxState, UserRecord } from './state';

/**
 * What a project export archive holds, in the forge's layout (`Gitlab::ImportExport`, NDJSON), as the sandbox writes
 * and reads it; what it holds and leaves out: src/sandbox/README.md, "Project export archives".
 */

/** The relations of an archive, each `tree/project/<name>.ndjson`, in the order they are restored. */
export const PROJECT_RELATIONS = [
  'project_members',
  'protected_branches',
  'approval_rules',
  'external_status_checks',
  'ci_pipelines',
  'issues',
  'merge_requests',
] as const;
export type ProjectRelation = (typeof PROJECT_RELATIONS)[number];

const username = z.string().nullable().default(null);
const timestamp = z.string();
const nullableTimestamp = z.string().nullable().default(null);

const attributesSchema = z.object({
  name: z.string().optional(),
  path: z.string().optional(),
  description: z.string().nullable().default(null),
  visibility: z.enum(VISIBILITIES).default('private'),
  default_branch: z.string().min(1).default('main'),
  archived: z.boolean().default(false),
  request_access_enabled: z.boolean().default(true),
  created_at: timestamp.optional(),
  approvals_before_merge: z.number().int().nonnegative().default(0),
  reset_approvals_on_push: z.boolean().default(true),
  disable_overriding_approvers_per_merge_request: z.boolean().default(false),
  merge_requests_author_approval: z.boolean().default(false),
  merge_requests_disable_committers_approval: z.boolean().default(false),
  require_password_to_approve: z.boolean().default(false),
});
export type ArchivedProjectAttributes = z.output<typeof attributesSchema>;

const memberSchema = z.object({ user_id: z.number().optional(), username: z.string(), access_level: z.number().int() });

const jobSchema = z.object({
  id: z.number().int(),
  kind: z.enum(['build', 'bridge']).default('build'),
  name: z.string(),
  stage: z.string().default('test'),
  status: z.enum(JOB_STATUSES),
  allow_failure: z.boolean().default(false),
  created_at: timestamp,
  started_at: nullableTimestamp,
  finished_at: nullableTimestamp,
  erased_at: nullableTimestamp,
  retried: z.boolean().default(false),
  user: username,
  failure_reason: z.string().nullable().default(null),
  tag_list: z.array(z.string()).default([]),
  coverage: z.number().nullable().default(null),
  downstream_pipeline_id: z.number().int().nullable().default(null),
});

const pipelineSchema = z.object({
  id: z.number().int(),
  ref: z.string(),
  tag: z.boolean().default(false),
  sha: z.string(),
  status: z.enum(JOB_STATUSES),
  source: z.string().default('push'),
  created_at: timestamp,
  updated_at: timestamp,
  parent_pipeline_id: z.number().int().nullable().default(null),
  user: username,
  commit: z.object({ title: z.string(), message: z.string(), author_name: z.string(), author_email: z.string() }),
  jobs: z.array(jobSchema).default([]),
});

const accessSchema = z.union([
  z.object({ access_level: z.number().int() }),
  z.object({ user: z.string() }),
  z.object({ group: z.string() }),
]);

const protectedBranchSchema = z.object({
  name: z.string().min(1),
  push_access_levels: z.array(accessSchema).default([]),
  merge_access_levels: z.array(accessSchema).default([]),
  unprotect_access_levels: z.array(accessSchema).default([]),
  allow_force_push: z.boolean().default(false),
  code_owner_approval_required: z.boolean().default(false),
});

const approvalRuleSchema = z.object({
  name: z.string().min(1),
  rule_type: z.enum(['regular', 'report_approver', 'code_owner']).default('regular'),
  approvals_required: z.number().int().nonnegative(),
  users: z.array(z.string()).default([]),
  groups: z.array(z.string()).default([]),
  protected_branches: z.array(z.string()).default([]),
});

const statusCheckSchema = z.object({
  name: z.string().min(1),
  external_url: z.string(),
  protected_branches: z.array(z.string()).default([]),
});

const labelEventSchema = z.object({
  action: z.enum(['add', 'remove']),
  user: username,
  label: z.object({
    name: z.string(),
    color: z.string().default('#6699cc'),
    description: z.string().nullable().default(null),
  }),
  created_at: timestamp,
});

const weightEventSchema = z.object({ user: username, weight: z.number().int(), created_at: timestamp });

const issueSchema = z.object({
  iid: z.number().int().positive(),
  title: z.string(),
  resource_label_events: z.array(labelEventSchema).default([]),
  resource_weight_events: z.array(weightEventSchema).default([]),
});

const mergeRequestSchema = z.object({
  iid: z.number().int().positive(),
  title: z.string(),
  resource_label_events: z.array(labelEventSchema).default([]),
});

const RELATION_SCHEMAS = {
  project_members: memberSchema,
  protected_branches: protectedBranchSchema,
  approval_rules: approvalRuleSchema,
  external_status_checks: statusCheckSchema,
  ci_pipelines: pipelineSchema,
  issues: issueSchema,
  merge_requests: mergeRequestSchema,
} satisfies Record<ProjectRelation, z.ZodType>;

export type ArchivedRelations = { [R in ProjectRelation]: z.output<(typeof RELATION_SCHEMAS)[R]>[] };
export type ArchivedMember = ArchivedRelations['project_members'][number];
export type ArchivedPipeline = ArchivedRelations['ci_pipelines'][number];
export type ArchivedProtectedBranch = ArchivedRelations['protected_branches'][number];
export type ArchivedIssue = ArchivedRelations['issues'][number];

/** The readable contents of an archive. */
export interface ArchivedProject {
  version: string | null;
  project: ArchivedProjectAttributes;
  relations: ArchivedRelations;
}

/** A line of a relation file the import could not use; the forge lists these as `failed_relations`. */
export interface FailedRelationLine {
  relation_name: ProjectRelation;
  line_number: number;
  exception_class: string;
  exception_message: string;
}

export type ReadProjectArchive =
  { ok: true; archive: ArchivedProject; failures: FailedRelationLine[] } | { ok: false; error: string };

// ---- writing --------------------------------------------------------------------------------------------------

export interface ProjectArchiveOptions {
  /** Replaces the project's description in the archive (`POST /projects/:id/export` `description`). */
  description?: string;
  paddingBytes?: number;
}

/** The export archive of a project as a gzip-compressed tar. */
export function projectArchive(
  state: SandboxState,
  project: ProjectRecord,
  options: ProjectArchiveOptions = {},
): Buffer {
  const relations = archivedRelations(state, project);
  const entries: TarEntry[] = [
    { name: 'VERSION', data: Buffer.from(`${ARCHIVE_VERSION}\n`) },
    {
      name: 'tree/project.json',
      data: Buffer.from(JSON.stringify(archivedAttributes(state, project, options.description))),
    },
    ...PROJECT_RELATIONS.map((relation) => ({
      name: `tree/project/${relation}.ndjson`,
      data: Buffer.from((relations[relation] as unknown[]).map((record) => `${JSON.stringify(record)}\n`).join('')),
    })),
  ];
  if (options.paddingBytes)
    entries.push({ name: 'tree/padding.bin', data: padding(options.paddingBytes, 'project', project.id) });
  return gzipTar(entries);
}

/** `tree/project.json`: the project's own attributes, approval settings included (they are the project's columns). */
export function archivedAttributes(
  state: SandboxState,
  project: ProjectRecord,
  description?: string,
): ArchivedProjectAttributes {
  return {
    name: project.name,
    path: project.path,
    description: description ?? project.description,
    visibility: project.visibility,
    default_branch: project.default_branch,
    archived: project.archived,
    request_access_enabled: project.request_access_enabled,
    created_at: project.created_at,
    ...state.approvals.project(project.id).settings,
  };
}

/** Every relation of the project, each in a stable order (ids, then names), as its archive holds them. */
export function archivedRelations(state: SandboxState, project: ProjectRecord): ArchivedRelations {
  const id = project.id;
  const userName = (userId: number | null): string | null =>
    userId === null ? null : (state.users.get(userId)?.username ?? null);
  const branchNames = new Map<number, string>();
  const branches = [...state.protectedBranches.values()].filter((b) => b.project_id === id).sort((a, b) => a.id - b.id);
  for (const branch of branches) branchNames.set(branch.id, branch.name);
  const namesOf = (ids: number[]): string[] => ids.map((b) => branchNames.get(b)).filter((n) => n !== undefined);
  type ArchivedAccess = ArchivedProtectedBranch['push_access_levels'][number];
  const access = (entries: BranchAccessRecord[]): ArchivedAccess[] =>
    entries.flatMap((entry): ArchivedAccess[] => {
      if (entry.user_id !== null) {
        const name = userName(entry.user_id);
        return name === null ? [] : [{ user: name }];
      }
      if (entry.group_id !== null) {
        const group = state.groups.get(entry.group_id);
        return group ? [{ group: state.groupFullPath(group) }] : [];
      }
      return entry.access_level === null ? [] : [{ access_level: entry.access_level }];
    });
  const approvals = state.approvals.project(id);
  const groupPaths = (ids: number[]): string[] =>
    ids
      .map((g) => state.groups.get(g))
      .filter((g) => g !== undefined)
      .map((g) => state.groupFullPath(g));
  const labelEvents = (type: 'Issue' | 'MergeRequest', resourceId: number): ArchivedIssue['resource_label_events'] =>
    [...state.labelEvents.values()]
      .filter((e) => e.resource_type === type && e.resource_id === resourceId)
      .sort((a, b) => a.id - b.id)
      .map((e) => {
        const label = state.labels.get(e.label_id);
        return {
          action: e.action,
          user: userName(e.user_id),
          label: { name: label?.name ?? '', color: label?.color ?? '#6699cc', description: label?.description ?? null },
          created_at: e.created_at,
        };
      });
  const jobs = [...state.jobs.values()].filter((j) => j.project_id === id).sort((a, b) => a.id - b.id);
  return {
    project_members: state.members
      .filter((m) => m.source === 'project' && m.source_id === id)
      .sort((a, b) => a.user_id - b.user_id)
      .map((m) => ({ user_id: m.user_id, username: userName(m.user_id) ?? '', access_level: m.access_level })),
    protected_branches: branches.map((b) => ({
      name: b.name,
      push_access_levels: access(b.push_access_levels),
      merge_access_levels: access(b.merge_access_levels),
      unprotect_access_levels: access(b.unprotect_access_levels),
      allow_force_push: b.allow_force_push,
      code_owner_approval_required: b.code_owner_approval_required,
    })),
    approval_rules: [...approvals.rules]
      .sort((a, b) => a.id - b.id)
      .map((rule) => ({
        name: rule.name,
        rule_type: rule.rule_type,
        approvals_required: rule.approvals_required,
        users: rule.user_ids.map(userName).filter((u) => u !== null),
        groups: groupPaths(rule.group_ids),
        protected_branches: namesOf(rule.protected_branch_ids),
      })),
    external_status_checks: [...approvals.external_rules]
      .sort((a, b) => a.id - b.id)
      .map((rule) => ({
        name: rule.name,
        external_url: rule.external_url,
        protected_branches: namesOf(rule.protected_branch_ids),
      })),
    ci_pipelines: [...state.pipelines.values()]
      .filter((p) => p.project_id === id)
      .sort((a, b) => a.id - b.id)
      .map((p) => ({
        id: p.id,
        ref: p.ref,
        tag: p.tag,
        sha: p.sha,
        status: state.pipelineStatus(p),
        source: p.source,
        created_at: p.created_at,
        updated_at: p.updated_at,
        parent_pipeline_id: p.parent_pipeline_id,
        user: userName(p.user_id),
        commit: { ...p.commit },
        // Without their logs, artifacts and tokens: the forge's export leaves them out.
        jobs: jobs
          .filter((j) => j.pipeline_id === p.id)
          .map((j) => ({
            id: j.id,
            kind: j.kind,
            name: j.name,
            stage: j.stage,
            status: j.status,
            allow_failure: j.allow_failure,
            created_at: j.created_at,
            started_at: j.started_at,
            finished_at: j.finished_at,
            erased_at: j.erased_at,
            retried: j.retried,
            user: userName(j.user_id),
            failure_reason: j.failure_reason,
            tag_list: [...j.tag_list],
            coverage: j.coverage,
            downstream_pipeline_id: j.downstream_pipeline_id,
          })),
      })),
    issues: [...state.issues.values()]
      .filter((i) => i.parent_id === id)
      .sort((a, b) => a.iid - b.iid)
      .map((issue) => ({
        iid: issue.iid,
        title: issue.title,
        resource_label_events: labelEvents('Issue', issue.id),
        resource_weight_events: [...state.weightEvents.values()]
          .filter((e) => e.issue_id === issue.id)
          .sort((a, b) => a.id - b.id)
          .map((e) => ({ user: userName(e.user_id), weight: e.weight, created_at: e.created_at })),
      })),
    merge_requests: [...state.mergeRequests.values()]
      .filter((m) => m.parent_id === id)
      .sort((a, b) => a.iid - b.iid)
      .map((mr) => ({ iid: mr.iid, title: mr.title, resource_label_events: labelEvents('MergeRequest', mr.id) })),
  };
}

// ---- reading --------------------------------------------------------------------------------------------------

/**
 * Reads an archive as the forge's import does: it must decompress (gzip and tar), carry `tree/project.json` and, when
 * it has a `VERSION`, the version this forge writes. Relation files may be missing (no records); a line that is not a
 * valid record is left out and reported, and the rest is imported. Entries may be named `./tree/...` (archives
 * `tar -C dir .` wrote); other entries (a real forge's repository bundle, uploads, padding) are ignored.
 */
export function readProjectArchive(data: Buffer, filename: string): ReadProjectArchive {
  let entries: TarEntry[];
  try {
    entries = gunzipTar(data);
  } catch (error) {
    return { ok: false, error: `Unable to decompress ${filename}: ${(error as Error).message}` };
  }
  const byName = new Map(entries.map((entry) => [entry.name.replace(/^\.\//, ''), entry.data]));
  const version = byName.get('VERSION')?.toString('utf8').trim() ?? null;
  if (version !== null && version !== ARCHIVE_VERSION) {
    return { ok: false, error: `Import version mismatch: Required ${ARCHIVE_VERSION} but was ${version}` };
  }
  const projectJson = byName.get('tree/project.json');
  if (!projectJson) return { ok: false, error: 'Invalid file format: tree/project.json is missing' };
  let project: ArchivedProjectAttributes;
  try {
    const parsed = attributesSchema.safeParse(JSON.parse(projectJson.toString('utf8')));
    if (!parsed.success)
      return { ok: false, error: `Invalid file format: tree/project.json: ${z.prettifyError(parsed.error)}` };
    project = parsed.data;
  } catch (error) {
    return { ok: false, error: `Invalid file format: tree/project.json: ${(error as Error).message}` };
  }
  const failures: FailedRelationLine[] = [];
  const relations = Object.fromEntries(
    PROJECT_RELATIONS.map((relation) => {
      const lines = (byName.get(`tree/project/${relation}.ndjson`)?.toString('utf8') ?? '').split('\n');
      const records: unknown[] = [];
      lines.forEach((line, index) => {
        if (line.trim() === '') return;
        const failed = (exception_class: string, exception_message: string): void => {
          failures.push({ relation_name: relation, line_number: index, exception_class, exception_message });
        };
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch (error) {
          failed('JSON::ParserError', (error as Error).message);
          return;
        }
        const parsed = RELATION_SCHEMAS[relation].safeParse(value);
        if (parsed.success) records.push(parsed.data);
        else failed('ActiveRecord::RecordInvalid', z.prettifyError(parsed.error).replace(/\n/g, '; '));
      });
      return [relation, records];
    }),
  ) as ArchivedRelations;
  return { ok: true, archive: { version, project, relations }, failures };
}

// ---- restoring ------------------------------------------------------------------------------------------------

/**
 * Fills a project the import created with the archive's records, as the forge's import worker does: new ids,
 * users found again by username (members and branch or rule entries of unknown users are dropped, pipelines and events
 * they made go to the importer), groups by full path, labels by name. Owners come back as maintainers, and the
 * visibility is at most the namespace group's.
 */
export function restoreProject(
  state: SandboxState,
  project: ProjectRecord,
  archive: ArchivedProject,
  importer: UserRecord,
): void {
  const { project: attributes, relations } = archive;
  const namespaceGroup = state.groups.get(project.namespace_id);
  project.description = attributes.description;
  project.visibility = namespaceGroup
    ? leastVisible(attributes.visibility, namespaceGroup.visibility)
    : attributes.visibility;
  project.default_branch = attributes.default_branch;
  project.request_access_enabled = attributes.request_access_enabled;
  project.archived = attributes.archived;
  const approvals = state.approvals.project(project.id);
  approvals.settings = {
    approvals_before_merge: attributes.approvals_before_merge,
    reset_approvals_on_push: attributes.reset_approvals_on_push,
    disable_overriding_approvers_per_merge_request: attributes.disable_overriding_approvers_per_merge_request,
    merge_requests_author_approval: attributes.merge_requests_author_approval,
    merge_requests_disable_committers_approval: attributes.merge_requests_disable_committers_approval,
    require_password_to_approve: attributes.require_password_to_approve,
  };
  const now = state.nowIso();
  const user = (name: string | null): UserRecord | undefined =>
    name === null ? undefined : state.userByUsername(name);
  const groupId = (path: string): number | undefined => state.group(path)?.id;

  for (const member of relations.project_members) {
    const found = user(member.username);
    if (!found || found.id === importer.id || state.member('project', project.id, found.id)) continue;
    state.members.push({
      source: 'project',
      source_id: project.id,
      user_id: found.id,
      access_level: Math.min(member.access_level, 40),
      created_at: now,
    });
  }

  const branchIds = new Map<string, number>();
  for (const archived of relations.protected_branches) {
    if (branchIds.has(archived.name)) continue;
    const access = (entries: ArchivedProtectedBranch['push_access_levels']): BranchAccessRecord[] =>
      entries.flatMap((entry): BranchAccessRecord[] => {
        if ('access_level' in entry) return [{ access_level: entry.access_level, user_id: null, group_id: null }];
        if ('user' in entry) {
          const found = user(entry.user);
          return found ? [{ access_level: null, user_id: found.id, group_id: null }] : [];
        }
        const id = groupId(entry.group);
        return id === undefined ? [] : [{ access_level: null, user_id: null, group_id: id }];
      });
    const id = state.nextId('protectedBranch');
    branchIds.set(archived.name, id);
    state.protectedBranches.set(id, {
      id,
      project_id: project.id,
      name: archived.name,
      push_access_levels: access(archived.push_access_levels),
      merge_access_levels: access(archived.merge_access_levels),
      unprotect_access_levels: access(archived.unprotect_access_levels),
      allow_force_push: archived.allow_force_push,
      code_owner_approval_required: archived.code_owner_approval_required,
    });
  }
  const branchIdsOf = (names: string[]): number[] =>
    names.map((n) => branchIds.get(n)).filter((id) => id !== undefined);

  for (const rule of relations.approval_rules) {
    if (approvals.rules.some((r) => r.name === rule.name)) continue;
    approvals.rules.push({
      id: state.approvals.nextId('projectRule'),
      name: rule.name,
      rule_type: rule.rule_type,
      approvals_required: rule.approvals_required,
      user_ids: rule.users.map((u) => user(u)?.id).filter((id) => id !== undefined),
      group_ids: rule.groups.map(groupId).filter((id) => id !== undefined),
      protected_branch_ids: branchIdsOf(rule.protected_branches),
    });
  }
  for (const check of relations.external_status_checks) {
    approvals.external_rules.push({
      id: state.approvals.nextId('externalRule'),
      name: check.name,
      external_url: check.external_url,
      protected_branch_ids: branchIdsOf(check.protected_branches),
      created_at: now,
      updated_at: now,
    });
  }

  restorePipelines(state, project, relations.ci_pipelines, (name) => user(name) ?? importer);
  restoreIssuables(state, project, relations, (name) => user(name) ?? importer);
  project.last_activity_at = now;
}

const VISIBILITY_ORDER: readonly Visibility[] = VISIBILITIES;

function leastVisible(a: Visibility, b: Visibility): Visibility {
  return VISIBILITY_ORDER[Math.min(Math.max(0, VISIBILITY_ORDER.indexOf(a)), VISIBILITY_ORDER.indexOf(b))];
}

function restorePipelines(
  state: SandboxState,
  project: ProjectRecord,
  pipelines: ArchivedPipeline[],
  userOf: (name: string | null) => UserRecord,
): void {
  // The archive's ids link parents to children and bridges to their downstream pipelines; each gets a new one here.
  const pipelineIds = new Map<number, number>();
  for (const archived of pipelines) pipelineIds.set(archived.id, state.nextId('pipeline'));
  const restored: { record: PipelineRecord; status: PipelineRecord['status_override'] }[] = [];
  for (const archived of pipelines) {
    const record: PipelineRecord = {
      id: pipelineIds.get(archived.id)!,
      project_id: project.id,
      ref: archived.ref,
      tag: archived.tag,
      sha: archived.sha,
      status_override: null,
      source: archived.source,
      created_at: archived.created_at,
      updated_at: archived.updated_at,
      parent_pipeline_id:
        archived.parent_pipeline_id === null ? null : (pipelineIds.get(archived.parent_pipeline_id) ?? null),
      user_id: userOf(archived.user).id,
      commit: { ...archived.commit },
    };
    state.pipelines.set(record.id, record);
    restored.push({ record, status: archived.status });
    for (const job of archived.jobs) {
      const restoredJob: JobRecord = {
        id: state.nextId('job'),
        kind: job.kind,
        project_id: project.id,
        pipeline_id: record.id,
        name: job.name,
        stage: job.stage,
        ref: record.ref,
        tag: record.tag,
        status: job.status,
        allow_failure: job.allow_failure,
        created_at: job.created_at,
        started_at: job.started_at,
        finished_at: job.finished_at,
        erased_at: job.erased_at,
        log: null,
        retried: job.retried,
        user_id: userOf(job.user).id,
        token: null,
        failure_reason: job.failure_reason,
        artifacts: [],
        artifacts_expire_at: null,
        tag_list: [...job.tag_list],
        coverage: job.coverage,
        downstream_pipeline_id:
          job.downstream_pipeline_id === null ? null : (pipelineIds.get(job.downstream_pipeline_id) ?? null),
      };
      state.jobs.set(restoredJob.id, restoredJob);
    }
  }
  // The forge stores a pipeline's status; the sandbox derives it from the jobs unless told otherwise.
  for (const { record, status } of restored) {
    if (state.pipelineStatus(record) !== status) record.status_override = status;
  }
}

function restoreIssuables(
  state: SandboxState,
  project: ProjectRecord,
  relations: ArchivedRelations,
  userOf: (name: string | null) => UserRecord,
): void {
  const labelId = (label: ArchivedIssue['resource_label_events'][number]['label']): number => {
    const found = [...state.labels.values()].find((l) => l.name === label.name);
    if (found) return found.id;
    const id = state.nextId('label');
    state.labels.set(id, { id, name: label.name, color: label.color, description: label.description });
    return id;
  };
  const addLabelEvents = (
    type: 'Issue' | 'MergeRequest',
    resourceId: number,
    events: ArchivedIssue['resource_label_events'],
  ): void => {
    for (const event of events) {
      const id = state.nextId('labelEvent');
      state.labelEvents.set(id, {
        id,
        resource_type: type,
        resource_id: resourceId,
        user_id: userOf(event.user).id,
        label_id: labelId(event.label),
        action: event.action,
        created_at: event.created_at,
      });
    }
  };
  for (const archived of relations.issues) {
    if (state.issue(project.id, archived.iid)) continue;
    const id = state.nextId('issue');
    state.issues.set(id, { id, parent_id: project.id, iid: archived.iid, title: archived.title });
    addLabelEvents('Issue', id, archived.resource_label_events);
    for (const event of archived.resource_weight_events) {
      const eventId = state.nextId('weightEvent');
      state.weightEvents.set(eventId, {
        id: eventId,
        issue_id: id,
        user_id: userOf(event.user).id,
        weight: event.weight,
        created_at: event.created_at,
      });
    }
  }
  for (const archived of relations.merge_requests) {
    if (state.mergeRequest(project.id, archived.iid)) continue;
    const id = state.nextId('mergeRequest');
    state.mergeRequests.set(id, { id, parent_id: project.id, iid: archived.iid, title: archived.title });
    addLabelEvents('MergeRequest', id, archived.resource_label_events);
  }
}
