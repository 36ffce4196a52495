import { createHash } from 'node:crypto';
import type { JobRecord, PipelineRecord } from './ci-state';
import type { GroupRecord, ProjectRecord } from './namespaces-state';
import type { ProtectedBranchRecord } from './protected-branches-state';
import type { UserRecord } from './people-state';
import type { MovableClock } from '../clock';
import type { JobStatus } from '../gitlab/types/jobs';

/**
 * The bodies of the forge's job and pipeline webhooks ("Webhook events": Job events, Pipeline events), field by field
 * as GitLab builds them (`lib/gitlab/data_builder/build.rb` and `pipeline.rb`, the `hook_attrs` of User, Project and
 * Commit). Times are ISO 8601 with milliseconds as newer forges send them (`Gitlab::WebHooks.normalize_dates`);
 * older ones wrote `2016-08-12 15:23:28 UTC`. The sandbox has no runners, environments, merge request pipelines
 * or CI variables: `runner`, `environment` and `merge_request` are null, `variables` empty.
 */

/** `Gitlab::Git::SHA1_BLANK_SHA`: a pipeline's `before_sha` when it has none, as every sandbox pipeline. */
const BLANK_SHA = '0000000000000000000000000000000000000000';
const VISIBILITY_LEVEL = { private: 0, internal: 10, public: 20 } as const;
const COMPLETED: readonly JobStatus[] = ['success', 'failed', 'canceled', 'skipped'];

/** Labels of the forge's detailed statuses (`Gitlab::Ci::Status::*#label`). */
const DETAILED_STATUS: Record<JobStatus, string> = {
  created: 'created',
  pending: 'pending',
  running: 'running',
  success: 'passed',
  failed: 'failed',
  canceled: 'canceled',
  skipped: 'skipped',
  manual: 'manual',
};

/**
 * What deliveries read of the sandbox's state: its records and the few derived facts payloads carry. SandboxState is
 * one; naming only this keeps the hook areas below the state that owns them.
 */
export interface HookedState {
  readonly clock: MovableClock;
  readonly users: ReadonlyMap<number, UserRecord>;
  readonly groups: ReadonlyMap<number, GroupRecord>;
  readonly projects: ReadonlyMap<number, ProjectRecord>;
  readonly pipelines: ReadonlyMap<number, PipelineRecord>;
  readonly jobs: ReadonlyMap<number, JobRecord>;
  nowIso(): string;
  projectFullPath(project: ProjectRecord): string;
  projectFullName(project: ProjectRecord): string;
  pipelineStatus(pipeline: PipelineRecord): JobStatus;
  namespaceOwnerUser(namespaceId: number): UserRecord | undefined;
  protectedBranch(projectId: number, name: string): ProtectedBranchRecord | undefined;
}

export class HookPayloads {
  constructor(
    private readonly state: HookedState,
    private readonly baseUrl: string,
  ) {}

  /** `X-Gitlab-Event: Job Hook` (`Gitlab::DataBuilder::Build.build`). */
  job(job: JobRecord): Record<string, unknown> {
    const pipeline = this.state.pipelines.get(job.pipeline_id);
    const project = this.state.projects.get(job.project_id);
    if (!pipeline || !project) throw new Error(`job ${job.id} has no pipeline or project`);
    const user = job.user_id !== null ? this.state.users.get(job.user_id) : undefined;
    const times = jobTimes(job, this.state.clock.now());
    const pipelineTimes = this.pipelineTimes(pipeline);
    const payload: Record<string, unknown> = {
      object_kind: 'build',
      ref: job.ref,
      tag: job.tag,
      before_sha: BLANK_SHA,
      sha: pipeline.sha,
      retries_count: this.retriesCount(job),
      build_id: job.id,
      build_name: job.name,
      build_stage: job.stage,
      build_status: job.status,
      build_created_at: job.created_at,
      build_started_at: job.started_at,
      build_finished_at: job.finished_at,
      build_duration: times.duration,
      build_queued_duration: times.queued,
      build_allow_failure: job.allow_failure,
      // An enum column whose default is `unknown_failure`: jobs that did not fail carry it too (gitlab#214465).
      build_failure_reason: job.failure_reason ?? 'unknown_failure',
      pipeline_id: pipeline.id,
      runner: null,
      project_id: project.id,
      project_name: this.state.projectFullName(project),
      user: user ? this.userAttrs(user) : null,
      // `commit.id` is the pipeline's id, as the forge's own comment says.
      commit: {
        id: pipeline.id,
        name: null,
        sha: pipeline.sha,
        message: pipeline.commit.message,
        author_name: pipeline.commit.author_name,
        author_email: pipeline.commit.author_email,
        author_url: this.authorUrl(pipeline),
        status: this.state.pipelineStatus(pipeline),
        duration: pipelineTimes.duration,
        started_at: pipelineTimes.started_at,
        finished_at: pipelineTimes.finished_at,
      },
      repository: this.repositoryAttrs(project),
      project: this.projectAttrs(project),
      environment: null,
    };
    const source = this.sourcePipeline(pipeline);
    if (source) payload.source_pipeline = source;
    return payload;
  }

  /** `X-Gitlab-Event: Pipeline Hook` (`Gitlab::DataBuilder::Pipeline`). */
  pipeline(pipeline: PipelineRecord): Record<string, unknown> {
    const project = this.state.projects.get(pipeline.project_id);
    if (!project) throw new Error(`pipeline ${pipeline.id} has no project`);
    const user = pipeline.user_id !== null ? this.state.users.get(pipeline.user_id) : undefined;
    const builds = this.latestBuilds(pipeline);
    const status = this.state.pipelineStatus(pipeline);
    const times = this.pipelineTimes(pipeline);
    const warnings = status === 'success' && builds.some((b) => b.status === 'failed' && b.allow_failure);
    const webUrl = this.projectWebUrl(project);
    const payload: Record<string, unknown> = {
      object_kind: 'pipeline',
      object_attributes: {
        id: pipeline.id,
        iid: this.pipelineIid(pipeline),
        name: null,
        ref: pipeline.ref,
        tag: pipeline.tag,
        sha: pipeline.sha,
        before_sha: BLANK_SHA,
        source: pipeline.source,
        status,
        detailed_status: warnings ? 'passed with warnings' : DETAILED_STATUS[status],
        stages: [...new Set(builds.map((b) => b.stage))],
        created_at: pipeline.created_at,
        finished_at: times.finished_at,
        duration: times.duration,
        queued_duration: times.queued_duration,
        protected_ref: this.state.protectedBranch(project.id, pipeline.ref) !== undefined,
        variables: [],
        url: `${webUrl}/-/pipelines/${pipeline.id}`,
      },
      merge_request: null,
      user: user ? this.userAttrs(user) : null,
      project: this.projectAttrs(project),
      commit: {
        id: pipeline.sha,
        message: pipeline.commit.message,
        title: pipeline.commit.title,
        timestamp: pipeline.created_at,
        url: `${webUrl}/-/commit/${pipeline.sha}`,
        author: { name: pipeline.commit.author_name, email: pipeline.commit.author_email },
      },
      builds: builds.map((b) => this.buildAttrs(b)),
    };
    const source = this.sourcePipeline(pipeline);
    if (source) payload.source_pipeline = source;
    return payload;
  }

  // ---- parts --------------------------------------------------------------------------------------------------

  /** `User#hook_attrs`: the e-mail only when it is public (`webhook_email`). */
  private userAttrs(user: UserRecord): Record<string, unknown> {
    return {
      id: user.id,
      name: user.name,
      username: user.username,
      avatar_url: `https://www.gravatar.com/avatar/${md5(user.email.toLowerCase())}?s=80&d=identicon`,
      email: user.public_email !== '' ? user.public_email : '[REDACTED]',
    };
  }

  /** `Project#hook_attrs(backward: false)`; `namespace` is the namespace's own name. */
  private projectAttrs(project: ProjectRecord): Record<string, unknown> {
    const fullPath = this.state.projectFullPath(project);
    const group = this.state.groups.get(project.namespace_id);
    return {
      id: project.id,
      name: project.name,
      description: project.description,
      web_url: this.projectWebUrl(project),
      avatar_url: null,
      git_ssh_url: this.sshUrl(fullPath),
      git_http_url: `${this.baseUrl}/${fullPath}.git`,
      namespace: group ? group.name : (this.state.namespaceOwnerUser(project.namespace_id)?.name ?? ''),
      visibility_level: VISIBILITY_LEVEL[project.visibility],
      path_with_namespace: fullPath,
      default_branch: project.default_branch,
      ci_config_path: null,
    };
  }

  /** The deprecated `repository` key the job hook still sends. */
  private repositoryAttrs(project: ProjectRecord): Record<string, unknown> {
    const fullPath = this.state.projectFullPath(project);
    return {
      name: project.name,
      url: this.sshUrl(fullPath),
      description: project.description,
      homepage: this.projectWebUrl(project),
      git_http_url: `${this.baseUrl}/${fullPath}.git`,
      git_ssh_url: this.sshUrl(fullPath),
      visibility_level: VISIBILITY_LEVEL[project.visibility],
    };
  }

  /** A build in the pipeline hook's `builds` (`build_hook_attrs`). */
  private buildAttrs(job: JobRecord): Record<string, unknown> {
    const user = job.user_id !== null ? this.state.users.get(job.user_id) : undefined;
    const times = jobTimes(job, this.state.clock.now());
    const archive = job.artifacts.find((a) => a.file_type === 'archive');
    return {
      id: job.id,
      stage: job.stage,
      name: job.name,
      status: job.status,
      created_at: job.created_at,
      started_at: job.started_at,
      finished_at: job.finished_at,
      duration: times.duration,
      queued_duration: times.queued,
      failure_reason: job.status === 'failed' ? (job.failure_reason ?? 'unknown_failure') : null,
      when: job.status === 'manual' ? 'manual' : 'on_success',
      manual: job.status === 'manual',
      allow_failure: job.allow_failure,
      user: user ? this.userAttrs(user) : null,
      runner: null,
      artifacts_file: { filename: archive?.filename ?? null, size: archive?.size ?? null },
      environment: null,
    };
  }

  /** A child pipeline names its parent and the bridge that triggered it. */
  private sourcePipeline(pipeline: PipelineRecord): Record<string, unknown> | undefined {
    if (pipeline.parent_pipeline_id === null) return undefined;
    const parent = this.state.pipelines.get(pipeline.parent_pipeline_id);
    const project = parent ? this.state.projects.get(parent.project_id) : undefined;
    if (!parent || !project) return undefined;
    const bridge = [...this.state.jobs.values()].find(
      (j) => j.kind === 'bridge' && j.downstream_pipeline_id === pipeline.id,
    );
    return {
      project: {
        id: project.id,
        web_url: this.projectWebUrl(project),
        path_with_namespace: this.state.projectFullPath(project),
      },
      job_id: bridge?.id ?? null,
      pipeline_id: parent.id,
    };
  }

  /** How often a job of this name was retried in the pipeline (`Ci::Build#retries_count`). */
  private retriesCount(job: JobRecord): number {
    let count = 0;
    for (const other of this.state.jobs.values()) {
      if (other.pipeline_id === job.pipeline_id && other.name === job.name && other.retried) count += 1;
    }
    return count;
  }

  private latestBuilds(pipeline: PipelineRecord): JobRecord[] {
    return [...this.state.jobs.values()]
      .filter((j) => j.pipeline_id === pipeline.id && j.kind === 'build' && !j.retried)
      .sort((a, b) => a.id - b.id);
  }

  /** Per-project pipeline number, in creation order (the sandbox stores none). */
  private pipelineIid(pipeline: PipelineRecord): number {
    let iid = 0;
    for (const other of this.state.pipelines.values()) {
      if (other.project_id === pipeline.project_id && other.id <= pipeline.id) iid += 1;
    }
    return iid;
  }

  /** Started with its first job, finished with its last once complete; durations in seconds. */
  private pipelineTimes(pipeline: PipelineRecord): {
    started_at: string | null;
    finished_at: string | null;
    duration: number | null;
    queued_duration: number | null;
  } {
    const builds = this.latestBuilds(pipeline);
    const starts = builds
      .map((b) => b.started_at)
      .filter((t): t is string => t !== null)
      .map(Date.parse);
    const ends = builds
      .map((b) => b.finished_at)
      .filter((t): t is string => t !== null)
      .map(Date.parse);
    const started = starts.length > 0 ? Math.min(...starts) : null;
    const complete = COMPLETED.includes(this.state.pipelineStatus(pipeline));
    const finished = complete && ends.length > 0 ? Math.max(...ends) : null;
    return {
      started_at: started === null ? null : new Date(started).toISOString(),
      finished_at: finished === null ? null : new Date(finished).toISOString(),
      duration: started !== null && finished !== null ? Math.round((finished - started) / 1000) : null,
      queued_duration: started !== null ? (started - Date.parse(pipeline.created_at)) / 1000 : null,
    };
  }

  private authorUrl(pipeline: PipelineRecord): string {
    const email = pipeline.commit.author_email.toLowerCase();
    const author = [...this.state.users.values()].find((u) => u.email.toLowerCase() === email);
    return author ? `${this.baseUrl}/${author.username}` : `mailto:${pipeline.commit.author_email}`;
  }

  private projectWebUrl(project: ProjectRecord): string {
    return `${this.baseUrl}/${this.state.projectFullPath(project)}`;
  }

  private sshUrl(fullPath: string): string {
    return `git@${new URL(this.baseUrl).hostname}:${fullPath}.git`;
  }
}

/** A job's duration (running: until now) and time in the queue, in seconds, as the jobs API computes them. */
function jobTimes(job: JobRecord, nowMs: number): { duration: number | null; queued: number | null } {
  const started = job.started_at !== null ? Date.parse(job.started_at) : null;
  const finished = job.finished_at !== null ? Date.parse(job.finished_at) : null;
  const created = Date.parse(job.created_at);
  const duration =
    started === null ? null : ((finished ?? (job.status === 'running' ? nowMs : started)) - started) / 1000;
  const queued =
    started !== null ? (started - created) / 1000 : job.status === 'pending' ? (nowMs - created) / 1000 : null;
  return { duration, queued };
}

function md5(text: string): string {
  return createHash('md5').update(text).digest('hex');
}
