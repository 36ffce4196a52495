import type { ActionParams, PolicyContext, PolicyRunner } from '../../engine/policy';
import { decideJobRetries, type JobRetrySnapshot, RETRY } from './job-retry.decide';
import { commitJobRetries, observeJobRetries } from './job-retry.observer';
import { type JobRetryConfig, jobRetryPolicy } from './job-retry.schema';

/** The job_retry policy as the engine runs it: poll every `interval`, decide purely, retry through the executor. */
export const jobRetryRunner: PolicyRunner<JobRetryConfig, JobRetrySnapshot> = {
  type: jobRetryPolicy.type,
  schema: jobRetryPolicy.schema,
  trigger: (config) => ({ every: config.interval }),
  observe: observeJobRetries,
  decide: decideJobRetries,
  commit: commitJobRetries,
  actions: {
    [RETRY]: async (params: ActionParams, context: PolicyContext) => {
      const job = await context.client.jobs.retry(numberParam(params, 'project'), numberParam(params, 'job_id'));
      return { detail: `new job ${job.id}` };
    },
  },
  maxActionsPerRun: (config) => config.max_actions_per_run,
};

/** Params come back from the queue as plain JSON; a missing or mistyped id is a bug, not something to send. */
function numberParam(params: ActionParams, name: string): number {
  const value = params[name];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new TypeError(`job_retry: action parameter "${name}" must be an integer, got ${JSON.stringify(value)}`);
  }
  return value;
}
