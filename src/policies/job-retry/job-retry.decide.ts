import type { ProjectRef } from '../../config/validators';
import { firstPositions } from '../../engine/order';
import { type Decision, SKIP } from '../../engine/policy';
import { retryParams } from './job-retry.params';
import type { JobRetryConfig } from './job-retry.schema';

/**
 * Deciding which failed jobs to retry: pure, no I/O, no clock. The observer reuses the predicates below to decide
 * what is worth reading (a pipeline's jobs, a log), so each rule is written once, here.
 */

/** The fields of a failed job the rules look at. */
export interface FailedJob {
  readonly id: number;
  readonly name: string;
  readonly stage: string;
  /** Branch or tag name. */
  readonly ref: string;
  /** True when the pipeline ran for a tag. */
  readonly tag: boolean;
  readonly allow_failure: boolean;
  readonly pipeline_id: number;
  /** The project's numeric id, as the job's pipeline names it. */
  readonly project_id: number;
  readonly finished_at: string | null;
}

/** The end of a job's log, as far as the observer read it. */
export type JobLog = { readonly state: 'not_fetched' } | { readonly state: 'gone' } | { readonly state: 'found'; readonly text: string };

export interface JobRetryCandidate {
  readonly job: FailedJob;
  /**
   * Jobs with this name in the job's pipeline, retried ones included (`include_retried=true`), whoever retried them.
   * Undefined when the pipeline's jobs were not read: the job failed a cheaper check, or the pipeline is gone.
   */
  readonly attempts?: number;
  /** The highest job id with this name in the pipeline; undefined when `attempts` is. */
  readonly newestAttemptId?: number;
  readonly log: JobLog;
}

/** Where the observer stopped in a project's failed jobs: the newest id and latest finish it has seen. */
export interface Watermark {
  readonly id: number;
  readonly finished_at: string;
}

export interface JobRetryProjectSnapshot {
  /** The project as configured (`acme/api` or `42`). */
  readonly project: ProjectRef;
  /**
   * The numeric id: the configured one, else the `pipeline.project_id` of a listed job. Undefined only for a project
   * configured by path that has no failed job to look at, where no decision needs it.
   */
  readonly projectId: number | undefined;
  /** The failed jobs that are new since the last acting pass, newest first. */
  readonly candidates: readonly JobRetryCandidate[];
  /** What `commit` stores after an acting pass; undefined when nothing has been seen yet. */
  readonly watermark: Watermark | undefined;
}

export interface JobRetrySnapshot {
  /** In the configured order. */
  readonly projects: readonly JobRetryProjectSnapshot[];
}

export const RETRY = 'retry';

/**
 * Rules 1 to 5, which need nothing but the job itself: the skip reason, or undefined when the job passes. The
 * observer reads nothing more for a job that fails them.
 */
export function cheapSkipReason(config: JobRetryConfig, job: FailedJob): string | undefined {
  const { match } = config;
  // A job allowed to fail does not fail its pipeline: retrying it would spend runner time for nothing by default.
  if (job.allow_failure && !match.allow_failure) return 'skip: allowed to fail';
  if (match.job_names && !match.job_names.some((p) => p.test(job.name))) return `skip: job name "${job.name}" not matched`;
  if (match.stages && !match.stages.some((p) => p.test(job.stage))) return `skip: stage ${job.stage} not matched`;
  if (match.refs && !match.refs.some((p) => p.test(job.ref))) return `skip: ref ${job.ref} not matched`;
  if (match.tag !== undefined && match.tag !== job.tag) {
    return job.tag ? 'skip: tag pipeline not matched' : 'skip: branch pipeline not matched';
  }
  return undefined;
}

/**
 * Rules 6 and 7, which need the pipeline's jobs: the skip reason, or undefined when this is the newest attempt and
 * retries are left. The observer reads no log for a job that fails them.
 */
export function historySkipReason(
  config: JobRetryConfig,
  candidate: { readonly job: Pick<FailedJob, 'id'>; readonly attempts?: number; readonly newestAttemptId?: number },
): string | undefined {
  const { attempts, newestAttemptId } = candidate;
  if (attempts === undefined || newestAttemptId === undefined) return 'skip: pipeline is gone';
  // Someone (a person or this policy) retried it already, or a later attempt failed and is judged on its own.
  if (newestAttemptId > candidate.job.id) return `skip: newer attempt ${newestAttemptId} exists`;
  const retried = attempts - 1;
  if (retried >= config.max_retries) return `skip: already retried ${retried} ${retried === 1 ? 'time' : 'times'}`;
  return undefined;
}

/** Whether rule 8 applies, i.e. whether the observer must read the end of a candidate's log. */
export function needsLog(config: JobRetryConfig): boolean {
  return config.match.failure_log !== undefined;
}

/** Rule 8: the skip reason, or the source of the first `failure_log` pattern that matched. */
function logVerdict(config: JobRetryConfig, log: JobLog): { skip: string } | { matched: string } | undefined {
  const patterns = config.match.failure_log;
  if (!patterns) return undefined;
  switch (log.state) {
    case 'gone':
      return { skip: 'skip: log is gone (erased or expired)' };
    case 'not_fetched':
      // Only an observer that skipped a read it owed gets here; never retry on a log nobody looked at.
      return { skip: 'skip: log not read' };
    case 'found': {
      const matched = patterns.find((p) => p.test(log.text));
      return matched ? { matched: matched.source } : { skip: 'skip: log did not match' };
    }
  }
}

function decideOne(config: JobRetryConfig, project: ProjectRef, projectId: number, candidate: JobRetryCandidate): Decision {
  const { job } = candidate;
  const base = {
    target: `${project} job ${job.id} (${job.name})`,
    // The same failure always has the same key, so the engine retries it at most once however often it is seen.
    key: `${projectId}:${job.id}`,
    params: retryParams({ project: projectId, jobId: job.id, pipelineId: job.pipeline_id, jobName: job.name, source: String(project) }),
  };
  const skip = (reason: string): Decision => ({ ...base, action: SKIP, reason });

  const cheap = cheapSkipReason(config, job);
  if (cheap) return skip(cheap);
  const history = historySkipReason(config, candidate);
  if (history) return skip(history);
  const verdict = logVerdict(config, candidate.log);
  if (verdict && 'skip' in verdict) return skip(verdict.skip);

  // attempts is known here: historySkipReason passed.
  const counter = `retry ${candidate.attempts ?? 1} of ${config.max_retries}`;
  const why = verdict ? `log matched "${verdict.matched}"` : `failed in stage ${job.stage}`;
  return {
    ...base,
    action: RETRY,
    reason: `${counter}: ${why}`,
    ...(config.delay > 0 ? { delayMs: config.delay } : {}),
  };
}

/**
 * One decision per candidate, retry or skip, each with its reason. Ordered by project as configured, then newest job
 * first, so a pass capped by `max_actions_per_run` retries the freshest failures first and `plan` reads the same
 * every time.
 */
export function decideJobRetries(config: JobRetryConfig, snapshot: JobRetrySnapshot, _now: Date): Decision[] {
  // The selection's order, whatever order the snapshot lists things in: listed projects as written, then the ones
  // globs found, by path. Positions are looked up in a map: a policy may cover thousands of projects.
  const positions = firstPositions(config.projects.explicit.map((item) => String(item.kind === 'id' ? item.id : item.path)));
  const listedFirst = (a: ProjectRef, b: ProjectRef): number => {
    const [pa, pb] = [positions.get(String(a)) ?? Infinity, positions.get(String(b)) ?? Infinity];
    if (pa !== pb) return pa < pb ? -1 : 1;
    return String(a).toLowerCase() < String(b).toLowerCase() ? -1 : String(a).toLowerCase() > String(b).toLowerCase() ? 1 : 0;
  };
  const projects = [...snapshot.projects].sort((a, b) => listedFirst(a.project, b.project));

  const decisions: Decision[] = [];
  for (const p of projects) {
    const candidates = [...p.candidates].sort((a, b) => b.job.id - a.job.id);
    for (const candidate of candidates) {
      decisions.push(decideOne(config, p.project, p.projectId ?? candidate.job.project_id, candidate));
    }
  }
  return decisions;
}
