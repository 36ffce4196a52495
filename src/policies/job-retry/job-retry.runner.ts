import type { ActionParams, PolicyContext, PolicyRunner } from '../../engine/policy';
import { decideJobRetries, type JobRetrySnapshot, RETRY } from './job-retry.decide';
import { commitJobRetries, observeJobRetries, recheckJobRetry } from './job-retry.observer';
import { retryTarget } from './job-retry.params';
import { type JobRetryConfig, jobRetryPolicy } from './job-retry.schema';

/** The job_retry policy as the engine runs it: poll every `interval`, decide purely, retry through the executor. */
export const jobRetryRunner: PolicyRunner<JobRetryConfig, JobRetrySnapshot> = {
  type: jobRetryPolicy.type,
  schema: jobRetryPolicy.schema,
  trigger: (config) => ({ every: config.interval }),
  observe: observeJobRetries,
  decide: decideJobRetries,
  commit: commitJobRetries,
  recheck: recheckJobRetry,
  actions: {
    [RETRY]: async (params: ActionParams, context: PolicyContext) => {
      const target = retryTarget(params);
      const job = await context.client.jobs.retry(target.project, target.jobId);
      return { detail: `new job ${job.id}` };
    },
  },
  maxActionsPerRun: (config) => config.max_actions_per_run,
};
