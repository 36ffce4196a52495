import type { StepContext } from '../../engine/policy';
import { historySkipReason } from './job-retry.decide';
import type { RetryTarget } from './job-retry.params';
import { attemptsOf, readPipeline } from './job-retry.reads';
import type { JobRetryConfig } from './job-retry.schema';

/**
 * The precondition of a retry: the job's pipeline read again now, and the same history rule as decide applied, so a
 * job someone retried since the pass looked (or while a `delay` ran) is not retried a second time. Undefined while the
 * retry still holds, else what changed.
 */
export async function jobStillToRetry(
  config: JobRetryConfig,
  target: RetryTarget,
  context: StepContext,
): Promise<string | undefined> {
  const job = { id: target.jobId, name: target.jobName, pipeline_id: target.pipelineId };
  const jobs = await readPipeline(context, target.project, target.pipelineId);
  const reason = historySkipReason(config, { job, ...(jobs && attemptsOf(job, jobs)) }, target.freeRetries ?? 0);
  return reason && `${reason.replace(/^skip: /, '')} (found when read again before retrying)`;
}
