import type {
  FailedJob,
  JobLog,
  JobRetryCandidate,
  JobRetryProjectSnapshot,
  JobRetrySnapshot,
} from '../../../src/policies/job-retry/job-retry.decide';
import { type JobRetryConfig, jobRetryPolicy } from '../../../src/policies/job-retry/job-retry.schema';
import { aJob } from '../gitlab/records';

/**
 * Builders for job_retry tests: small, readable defaults, with only what a test is about spelled out. The config
 * goes through the real schema, so defaults and conversions (durations, RE2) are the ones a policy file gets.
 */

/** A job_retry policy as written in YAML (snake_case, durations as text), parsed by the real schema. */
export function aConfig(fields: Record<string, unknown> = {}): JobRetryConfig {
  return jobRetryPolicy.schema.parse({
    name: 'retry-flaky',
    type: 'job_retry',
    projects: ['acme/api'],
    interval: '1m',
    ...fields,
  });
}

/** A failed `test-unit` job 812 on main, in pipeline 100 of project 1: the forge's job (aJob) as the observer keeps it. */
export function aFailedJob(fields: Partial<FailedJob> = {}): FailedJob {
  const { id, name, stage, ref, tag, allow_failure, pipeline } = aJob();
  return {
    id,
    name,
    stage,
    ref,
    tag,
    allow_failure,
    pipeline_id: pipeline.id,
    project_id: pipeline.project_id,
    finished_at: '2025-06-02T11:50:00.000Z',
    failure_reason: 'script_failure',
    ...fields,
  };
}

export interface CandidateFields extends Partial<FailedJob> {
  /** Default 1: the job is the pipeline's only attempt. */
  attempts?: number | undefined;
  /** Default: the job's own id. */
  newestAttemptId?: number | undefined;
  /** A string is a log that was found, null one that is gone; default: not fetched. */
  log?: JobLog | string | null;
}

/** A candidate for decide: `aFailedJob(fields)` with its attempts and log. */
export function aCandidate(fields: CandidateFields = {}): JobRetryCandidate {
  const { attempts, newestAttemptId, log, ...jobFields } = fields;
  const job = aFailedJob(jobFields);
  const hasHistory = !('attempts' in fields) || attempts !== undefined;
  return {
    job,
    ...(hasHistory ? { attempts: attempts ?? 1, newestAttemptId: newestAttemptId ?? job.id } : {}),
    log: toLog(log),
  };
}

function toLog(log: JobLog | string | null | undefined): JobLog {
  if (log === undefined) return { state: 'not_fetched' };
  if (log === null) return { state: 'gone' };
  if (typeof log === 'string') return { state: 'found', text: log };
  return log;
}

/** One project's part of a snapshot; `acme/api` with id 1 unless told otherwise. */
export function aProjectSnapshot(
  candidates: readonly JobRetryCandidate[],
  fields: Partial<Omit<JobRetryProjectSnapshot, 'candidates'>> = {},
): JobRetryProjectSnapshot {
  return { project: 'acme/api', projectId: 1, watermark: undefined, candidates, ...fields };
}

/** A snapshot of the single project `acme/api` (id 1) holding `candidates`. */
export function aSnapshot(...candidates: JobRetryCandidate[]): JobRetrySnapshot {
  return { projects: [aProjectSnapshot(candidates)] };
}

/** A snapshot of several projects, in the order given. */
export function aSnapshotOf(...projects: JobRetryProjectSnapshot[]): JobRetrySnapshot {
  return { projects };
}
