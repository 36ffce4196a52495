import type { ProjectRef } from '../../config/validators';
import type { StepContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import type { Job } from '../../gitlab/types/jobs';
import type { FailedJob } from './job-retry.decide';

/** The forge reads job_retry makes beyond its listing: a job by id, and a pipeline's jobs with every attempt. */

export async function readJob(
  context: StepContext,
  target: { readonly project: ProjectRef; readonly jobId: number },
): Promise<Job | undefined> {
  try {
    return await context.client.jobs.show(target.project, target.jobId);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Reads each pipeline's jobs at most once, however many of its failed jobs ask for them. */
export function pipelineReader(
  context: StepContext,
  project: ProjectRef,
): (pipelineId: number) => Promise<readonly Job[] | undefined> {
  const pipelines = new Map<number, Promise<readonly Job[] | undefined>>();
  return (pipelineId) => {
    let read = pipelines.get(pipelineId);
    if (!read) {
      read = readPipeline(context, project, pipelineId);
      pipelines.set(pipelineId, read);
    }
    return read;
  };
}

export async function readPipeline(
  context: StepContext,
  project: ProjectRef,
  pipelineId: number,
): Promise<readonly Job[] | undefined> {
  const jobs: Job[] = [];
  try {
    // include_retried: attempts that were retried, by this policy or by a person, count against max_retries.
    for await (const job of context.client.jobs.allForPipeline(project, pipelineId, { include_retried: true }))
      jobs.push(job);
  } catch (error) {
    // A pipeline deleted since the listing: its jobs cannot be retried, and decide says so.
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  return jobs;
}

/** Every attempt of the job's name in its own pipeline (child pipelines are listed too, and have their own). */
export function attemptsOf(
  job: Pick<FailedJob, 'id' | 'name' | 'pipeline_id'>,
  jobs: readonly Job[],
): { attempts: number; newestAttemptId: number } {
  const ids = new Set<number>([job.id]); // the listing may predate the job; it is an attempt all the same
  for (const other of jobs) if (other.name === job.name && other.pipeline.id === job.pipeline_id) ids.add(other.id);
  return { attempts: ids.size, newestAttemptId: Math.max(...ids) };
}

export function toFailedJob(job: Job): FailedJob {
  return {
    id: job.id,
    name: job.name,
    stage: job.stage,
    ref: job.ref,
    tag: job.tag,
    allow_failure: job.allow_failure,
    pipeline_id: job.pipeline.id,
    project_id: job.pipeline.project_id,
    finished_at: job.finished_at,
    failure_reason: job.failure_reason ?? null,
  };
}
