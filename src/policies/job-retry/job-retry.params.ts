import type { ActionParams } from '../../engine/policy';

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
}

export function retryParams(target: RetryTarget): ActionParams {
  return { project: target.project, job_id: target.jobId, pipeline_id: target.pipelineId, job_name: target.jobName, source: target.source };
}

/** Reads the params back; a missing or mistyped value is a bug, never something to send to the forge. */
export function retryTarget(params: ActionParams): RetryTarget {
  const jobName = params.job_name;
  if (typeof jobName !== 'string') throw new TypeError(`job_retry: action parameter "job_name" must be a string, got ${JSON.stringify(jobName)}`);
  // Retries queued by a version without `source` name their project by id.
  const source = typeof params.source === 'string' ? params.source : String(params.project);
  return { project: integer(params, 'project'), jobId: integer(params, 'job_id'), pipelineId: integer(params, 'pipeline_id'), jobName, source };
}

function integer(params: ActionParams, name: string): number {
  const value = params[name];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new TypeError(`job_retry: action parameter "${name}" must be an integer, got ${JSON.stringify(value)}`);
  }
  return value;
}
