import { createHash } from 'node:crypto';
import type { JobStatus } from '../gitlab/types/jobs';
import type { ProjectRecord, SeededProject } from './namespaces-state';
import type { PeopleState } from './people-state';
import type { WorldSeeding } from './seeding';
import type { WorldJob, WorldPipeline } from './world';

/** CI: pipelines and their jobs (builds and bridges), with the jobs' logs, tokens and artifacts. */

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

/** What builds and bridges of the world file have in common. */
type SeedJob = Pick<
  WorldJob,
  | 'id'
  | 'name'
  | 'stage'
  | 'status'
  | 'allow_failure'
  | 'created_at'
  | 'started_at'
  | 'finished_at'
  | 'retried'
  | 'user'
> &
  Partial<
    Pick<WorldJob, 'log' | 'token' | 'failure_reason' | 'artifacts' | 'artifacts_expire_at' | 'tag_list' | 'coverage'>
  > & { downstream_pipeline?: number };

/**
 * What the runners do with a retried job (sandbox-only, `/__sandbox/runners`): `idle` leaves it pending, as no runner
 * picks it up (the default); `down` fails it at once with the given reason and log, as a runner outage does; `up` runs it
 * to success at once.
 */
export interface Runners {
  state: 'idle' | 'down' | 'up';
  failure_reason: string;
  log: string;
}

export const RUNNERS_DOWN_DEFAULTS = {
  failure_reason: 'runner_system_failure',
  log: 'ERROR: Job failed (system failure): no space left on device\n',
} as const;

export class CiState {
  readonly pipelines = new Map<number, PipelineRecord>();
  readonly jobs = new Map<number, JobRecord>();
  readonly runners: Runners = { state: 'idle', ...RUNNERS_DOWN_DEFAULTS };

  constructor(private readonly people: PeopleState) {}

  jobByToken(token: string): JobRecord | undefined {
    for (const job of this.jobs.values()) if (job.token === token) return job;
    return undefined;
  }

  /** Derived pipeline status, following the forge's composite status. */
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

  /** A job of the pipeline changed at `now`: its status is derived from the jobs from here on. */
  touchPipeline(pipelineId: number, now: string): void {
    const pipeline = this.pipelines.get(pipelineId);
    if (!pipeline) return;
    pipeline.status_override = null;
    pipeline.updated_at = now;
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  /** The pipelines of the seeded projects with their jobs. */
  seed(projects: SeededProject[], seeding: WorldSeeding): void {
    for (const { world: p } of projects) {
      for (const pipeline of p.pipelines) {
        seeding.ids.reserve('pipeline', pipeline.id);
        [...pipeline.jobs, ...pipeline.bridges].forEach((j) => seeding.ids.reserve('job', j.id));
      }
    }
    for (const { world: p, record } of projects) {
      for (const pl of p.pipelines) this.seedPipeline(pl, record, seeding);
    }
  }

  private seedPipeline(pl: WorldPipeline, project: ProjectRecord, seeding: WorldSeeding): void {
    const created = pl.created_at ? seeding.time(pl.created_at) : seeding.ago(60 * 60 * 1000);
    // Every pipeline on the forge has a user; without one in the world file it is the first administrator.
    const pipelineUser =
      pl.user !== undefined
        ? this.people.userByUsername(pl.user)
        : ([...this.people.users.values()].find((u) => u.is_admin) ?? this.people.users.values().next().value);
    const pipelineId = pl.id ?? seeding.ids.next('pipeline');
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
    for (const j of pl.jobs) this.seedJob(j, 'build', pipeline, seeding);
    for (const b of pl.bridges) this.seedJob(b, 'bridge', pipeline, seeding);
  }

  private seedJob(j: SeedJob, kind: JobRecord['kind'], pipeline: PipelineRecord, seeding: WorldSeeding): void {
    const created = j.created_at ? seeding.time(j.created_at) : pipeline.created_at;
    const ran = ['running', 'success', 'failed', 'canceled'].includes(j.status);
    const finished = ['success', 'failed', 'canceled'].includes(j.status);
    const startedDefault = ran ? new Date(Date.parse(created) + 10_000).toISOString() : null;
    const started = j.started_at === undefined ? startedDefault : j.started_at && seeding.time(j.started_at);
    const finishedDefault = finished && started ? new Date(Date.parse(started) + 60_000).toISOString() : null;
    const user = j.user !== undefined ? this.people.userByUsername(j.user) : undefined;
    const job: JobRecord = {
      id: j.id ?? seeding.ids.next('job'),
      kind,
      project_id: pipeline.project_id,
      pipeline_id: pipeline.id,
      name: j.name,
      stage: j.stage,
      ref: pipeline.ref,
      tag: pipeline.tag,
      status: j.status,
      allow_failure: j.allow_failure,
      created_at: created,
      started_at: started,
      finished_at: j.finished_at === undefined ? finishedDefault : j.finished_at && seeding.time(j.finished_at),
      erased_at: null,
      log: j.log ?? null,
      retried: j.retried,
      user_id: user?.id ?? pipeline.user_id,
      token: j.token ?? null,
      failure_reason: j.failure_reason ?? (j.status === 'failed' ? 'script_failure' : null),
      artifacts: j.artifacts ?? [],
      artifacts_expire_at: j.artifacts_expire_at ? seeding.time(j.artifacts_expire_at) : null,
      tag_list: j.tag_list ?? [],
      coverage: j.coverage ?? null,
      // A bridge's downstream pipeline may be declared anywhere in the world; only its id is kept.
      downstream_pipeline_id: j.downstream_pipeline ?? null,
    };
    this.jobs.set(job.id, job);
  }
}
