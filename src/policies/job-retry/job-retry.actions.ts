import { configOf, defineAction } from '../../engine/action-params';
import type { PolicyAction } from '../../engine/policy';
import { ForbiddenError } from '../../gitlab/transport/errors';
import { RETRY } from './job-retry.decide';
import { jobStillToRetry } from './job-retry.precondition';
import { retryTarget } from './job-retry.params';
import { type JobRetryConfig, jobRetryPolicy } from './job-retry.schema';

/**
 * The retry of a failed job, after its precondition (the pipeline read again: nobody retried the job since the pass
 * looked, and retries are left). The executor is its only caller.
 */
const retry = defineAction({
  read: retryTarget,
  precondition: (target, context) =>
    jobStillToRetry(configOf<JobRetryConfig>(context, jobRetryPolicy), target, context),
  run: async (target, context) => {
    try {
      const job = await context.client.jobs.retry(target.project, target.jobId);
      return { detail: `new job ${job.id}` };
    } catch (error) {
      // The forge refuses a job retried already (`Job is not retryable`): when someone retried it between the
      // precondition and this call, that is done, by them. Any other refusal (an archived project) stands.
      if (!(error instanceof ForbiddenError)) throw error;
      const changed = await jobStillToRetry(configOf<JobRetryConfig>(context, jobRetryPolicy), target, context);
      if (changed === undefined) throw error;
      return { outcome: 'stale', detail: `the forge refused (${error.message}): ${changed}` };
    }
  },
});

export const jobRetryActions: Readonly<Record<string, PolicyAction>> = { [RETRY]: retry };
