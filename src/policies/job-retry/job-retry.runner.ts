import { configOf, defineAction } from '../../engine/action-params';
import { selectProjects } from '../../engine/discovery';
import type { PolicyRunner } from '../../engine/policy';
import { ForbiddenError } from '../../gitlab/transport/errors';
import { onePage, readFirstPage, selectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import { decideJobRetries, type JobRetrySnapshot, RETRY } from './job-retry.decide';
import { commitJobRetries, jobStillToRetry, observeJobRetries, observeJobRetryEvent } from './job-retry.observer';
import { retryTarget } from './job-retry.params';
import { type JobRetryConfig, jobRetryPolicy } from './job-retry.schema';

/** The job_retry policy as the engine runs it: poll every `interval`, decide purely, retry through the executor. */
export const jobRetryRunner: PolicyRunner<JobRetryConfig, JobRetrySnapshot> = {
  definition: jobRetryPolicy,
  trigger: (config) => ({ every: config.interval }),
  observe: observeJobRetries,
  decide: decideJobRetries,
  commit: commitJobRetries,
  observeEvent: observeJobRetryEvent,
  eventProjects: (config, context) => selectProjects(context, config.projects, config.include_archived),
  actions: {
    [RETRY]: defineAction({
      read: retryTarget,
      precondition: (target, context) => jobStillToRetry(configOf<JobRetryConfig>(context, jobRetryPolicy), target, context),
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
    }),
  },
  summarize: (config, snapshot) => {
    const candidates = snapshot.projects.reduce((sum, project) => sum + project.candidates.length, 0);
    return `${count(snapshot.projects.length, 'project')}, ${count(candidates, 'new failed job')}`;
  },
  // Only where globs or excludes decide which projects these are: a list written out needs no echo.
  covered: (config, snapshot) =>
    config.projects.globs.length + config.projects.excludes.length > 0 ? snapshot.projects.map((project) => String(project.project)) : undefined,
  probes: (config) =>
    selectionProbes(config.projects, {
      what: 'jobs',
      needs: 'Developer role or higher',
      read: (client, project) => readFirstPage(client.jobs.all(project, { scope: ['failed'] }, onePage())),
    }),
  maxActionsPerRun: (config) => config.max_actions_per_run,
};

