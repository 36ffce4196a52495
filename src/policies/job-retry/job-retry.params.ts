import { z } from 'zod';
import { param, readParams } from '../../engine/action-params';
import type { ActionParams, JsonValue } from '../../engine/policy';

/** The job a retry is about, as its decision carries it (plain JSON, so it survives the queue). */
export interface RetryTarget {
  readonly project: number;
  readonly jobId: number;
  readonly pipelineId: number;
  readonly jobName: string;
  /**
   * The project as the policy lists it (`acme/api` or `42`): an unsettled retry is looked at again only while the
   * policy still covers that project.
   */
  readonly source: string;
  /** Retries of the job's name in its pipeline made in a retry storm that failed again with its signature: not counted. */
  readonly freeRetries?: number;
}

const retrySchema = z.object({
  project: param.integer(),
  job_id: param.integer(),
  pipeline_id: param.integer(),
  job_name: param.text(),
  // Retries queued by a version without `source` name their project by id.
  source: param.text().optional(),
  free_retries: param.integer().optional(),
});

export function retryParams(target: RetryTarget): ActionParams {
  const params: Record<string, JsonValue> = {
    project: target.project,
    job_id: target.jobId,
    pipeline_id: target.pipelineId,
    job_name: target.jobName,
    source: target.source,
  };
  if (target.freeRetries) params.free_retries = target.freeRetries;
  return params;
}

/** Reads the params back; a missing or mistyped value is a bug, never something to send to the forge. */
export function retryTarget(params: ActionParams): RetryTarget {
  const read = readParams('job_retry', retrySchema, params);
  const free = read.free_retries ? { freeRetries: read.free_retries } : {};
  return {
    project: read.project,
    jobId: read.job_id,
    pipelineId: read.pipeline_id,
    jobName: read.job_name,
    source: read.source ?? String(read.project),
    ...free,
  };
}
