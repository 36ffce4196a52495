import { JOB_STATUSES, type JobStatus } from '../../gitlab/types/jobs';
import {
  badRequest,
  forbidden,
  intRouteParam,
  listParam,
  notFound,
  ok,
  paramError,
  boolParam,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { JobRecord, PipelineRecord, ProjectRecord, SandboxState } from '../state';
import { DEVELOPER, findProject, requireUnarchived } from './access';
import { JobPresenter as Presenter } from './jobs.presenter';

/** Jobs and their state moves (GitLab's "Jobs API"). */
export function registerJobRoutes(router: Router): void {
  router
    .get('/projects/:id/jobs', (ctx) => {
      const project = findProject(ctx);
      const scope = scopeParam(ctx);
      const jobs = builds(ctx.state, (j) => j.project_id === project.id)
        .filter((j) => !scope || scope.has(j.status))
        .sort(newestFirst);
      return paginate(ctx, jobs, (j) => present(ctx).job(j));
    })
    .get('/projects/:id/pipelines/:pipeline_id/jobs', (ctx) => {
      const project = findProject(ctx);
      const pipeline = findPipeline(ctx, project);
      const scope = scopeParam(ctx);
      const includeRetried = boolParam(ctx, 'include_retried') ?? false;
      // Jobs of child pipelines are listed with their parent's.
      const pipelineIds = new Set(pipelineTree(ctx.state, pipeline).map((p) => p.id));
      const jobs = builds(ctx.state, (j) => pipelineIds.has(j.pipeline_id))
        .filter((j) => includeRetried || !j.retried)
        .filter((j) => !scope || scope.has(j.status))
        .sort(newestFirst);
      return paginate(ctx, jobs, (j) => present(ctx).job(j));
    })
    .get('/projects/:id/pipelines/:pipeline_id/bridges', (ctx) => {
      const project = findProject(ctx);
      const pipeline = findPipeline(ctx, project);
      const scope = scopeParam(ctx);
      const bridges = [...ctx.state.jobs.values()]
        .filter((j) => j.kind === 'bridge' && j.pipeline_id === pipeline.id && !j.retried)
        .filter((j) => !scope || scope.has(j.status))
        .sort(newestFirst);
      return paginate(ctx, bridges, (j) => present(ctx).bridge(j));
    })
    .get('/job', (ctx) => ok(present(ctx).job(tokenJob(ctx))), 'job')
    .get('/job/allowed_agents', (ctx) => allowedAgents(ctx), 'job')
    .get('/projects/:id/jobs/:job_id', (ctx) => {
      const project = findProject(ctx);
      return ok(present(ctx).job(findJob(ctx, project, 'build')));
    })
    .get('/projects/:id/jobs/:job_id/trace', (ctx) => {
      const project = findProject(ctx);
      const job = findJob(ctx, project, 'build');
      // 404 when the job has no log (newer forges answer an empty 200 instead).
      if (job.log === null) throw notFound('Trace');
      return {
        status: 200,
        text: job.log,
        headers: { 'Content-Disposition': `infile; filename="${job.id}.log"` },
      };
    })
    .post('/projects/:id/jobs/:job_id/cancel', (ctx) => {
      const project = findProject(ctx, DEVELOPER);
      const job = findJob(ctx, project, 'build');
      requireUnarchived(project);
      // The forge's state machine ignores a cancel of a job that is no longer active and returns the job unchanged.
      if (job.status === 'created' || job.status === 'pending' || job.status === 'running') {
        job.status = 'canceled';
        job.finished_at = ctx.state.nowIso();
        ctx.state.touchPipeline(job.pipeline_id);
      }
      return ok(present(ctx).job(job));
    })
    .post('/projects/:id/jobs/:job_id/retry', (ctx) => {
      const project = findProject(ctx, DEVELOPER);
      const job = findJob(ctx, project, 'any');
      requireUnarchived(project);
      if (!retryable(job)) throw forbidden('Job is not retryable');
      return ok(present(ctx).job(retryJob(ctx, job)));
    })
    .post('/projects/:id/jobs/:job_id/erase', (ctx) => {
      const project = findProject(ctx, DEVELOPER);
      const job = findJob(ctx, project, 'build');
      requireUnarchived(project);
      const complete = ['success', 'failed', 'canceled', 'skipped'].includes(job.status);
      if (!complete || (job.log === null && job.artifacts.length === 0)) throw forbidden('Job is not erasable!');
      job.log = null;
      job.artifacts = [];
      job.artifacts_expire_at = null;
      job.erased_at = ctx.state.nowIso();
      // The erase answer carries `download_url: null`.
      return ok({ ...present(ctx).job(job), download_url: null });
    })
    .post('/projects/:id/jobs/:job_id/play', (ctx) => {
      const project = findProject(ctx, DEVELOPER);
      const job = findJob(ctx, project, 'any');
      requireUnarchived(project);
      if (job.status !== 'manual') throw badRequest('Unplayable Job');
      job.status = 'pending';
      job.user_id = ctx.user?.id ?? job.user_id;
      job.started_at = null;
      job.finished_at = null;
      ctx.state.touchPipeline(job.pipeline_id);
      return ok(present(ctx).job(job));
    });
}

/**
 * GitLab's `Ci::Processable#retryable?`: a finished job that has not been retried yet. A job retried once is
 * history; its newer attempt is the one to retry, so a second retry of the old one is refused like a running job.
 */
function retryable(job: JobRecord): boolean {
  return !job.retried && ['failed', 'success', 'canceled'].includes(job.status);
}

/** Retry clones the job as a new pending job with a new id; the original is then marked retried. */
export function retryJob(ctx: RequestContext, job: JobRecord): JobRecord {
  const state = ctx.state;
  const clone: JobRecord = {
    ...job,
    id: state.nextId('job'),
    status: 'pending',
    created_at: state.nowIso(),
    started_at: null,
    finished_at: null,
    erased_at: null,
    log: null,
    retried: false,
    user_id: ctx.user?.id ?? job.user_id,
    token: null,
    failure_reason: null,
    artifacts: [],
    artifacts_expire_at: null,
    coverage: null,
  };
  job.retried = true;
  runRetried(state, clone);
  state.jobs.set(clone.id, clone);
  state.touchPipeline(job.pipeline_id);
  return clone;
}

/** The runners' answer to a retried job, as `/__sandbox/runners` set them: none (pending), a failure, or a success. */
function runRetried(state: SandboxState, clone: JobRecord): void {
  const { runners } = state;
  if (runners.state === 'idle') return;
  const now = state.nowIso();
  clone.started_at = now;
  clone.finished_at = now;
  if (runners.state === 'down') {
    clone.status = 'failed';
    clone.failure_reason = runners.failure_reason;
    clone.log = runners.log;
  } else {
    clone.status = 'success';
    clone.log = 'Job succeeded\n';
  }
}

function present(ctx: RequestContext): Presenter {
  return new Presenter(ctx.state, ctx.baseUrl);
}

function builds(state: SandboxState, keep: (job: JobRecord) => boolean): JobRecord[] {
  return [...state.jobs.values()].filter((j) => j.kind === 'build' && keep(j));
}

function newestFirst(a: JobRecord, b: JobRecord): number {
  return b.id - a.id;
}

function scopeParam(ctx: RequestContext): Set<JobStatus> | undefined {
  const values = listParam(ctx, 'scope');
  if (!values || values.length === 0) return undefined;
  for (const value of values) {
    if (!(JOB_STATUSES as readonly string[]).includes(value)) throw paramError('scope does not have a valid value');
  }
  return new Set(values as JobStatus[]);
}

function findPipeline(ctx: RequestContext, project: ProjectRecord): PipelineRecord {
  const pipeline = ctx.state.pipelines.get(intRouteParam(ctx, 'pipeline_id'));
  if (!pipeline || pipeline.project_id !== project.id) throw notFound();
  return pipeline;
}

function pipelineTree(state: SandboxState, pipeline: PipelineRecord): PipelineRecord[] {
  const children = [...state.pipelines.values()].filter((p) => p.parent_pipeline_id === pipeline.id);
  return [pipeline, ...children.flatMap((child) => pipelineTree(state, child))];
}

/** `find_build!` sees only builds; `find_job!` (retry, play) also bridges. Both answer a bare `404 Not found`. */
function findJob(ctx: RequestContext, project: ProjectRecord, kind: 'build' | 'any'): JobRecord {
  const job = ctx.state.jobs.get(intRouteParam(ctx, 'job_id'));
  if (!job || job.project_id !== project.id || (kind === 'build' && job.kind !== 'build')) throw notFound();
  return job;
}

function tokenJob(ctx: RequestContext): JobRecord {
  if (!ctx.job) throw notFound('Job');
  return ctx.job;
}

function allowedAgents(ctx: RequestContext): ReturnType<typeof ok> {
  const job = tokenJob(ctx);
  const state = ctx.state;
  const presenter = present(ctx);
  const project = state.projects.get(job.project_id);
  const user = ctx.user;
  if (!project || !user) throw notFound('Job');
  return ok({
    allowed_agents: project.allowed_agents.map((agent) => {
      const configProject = state.projects.get(agent.config_project_id);
      return { id: agent.id, config_project: configProject ? presenter.projectSummary(configProject) : null };
    }),
    job: { id: job.id, name: job.name, stage: job.stage, project_id: project.id, project_name: project.name },
    pipeline: presenter.pipelineFull(job.pipeline_id),
    project: presenter.projectSummary(project),
    user: presenter.userSummary(user),
  });
}
