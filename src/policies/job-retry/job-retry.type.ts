import { selectProjects } from '../../engine/discovery';
import type { PolicyType } from '../../engine/policy';
import { onePage, readFirstPage, selectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import { jobRetryActions } from './job-retry.actions';
import { decideJobRetries, type JobRetrySnapshot } from './job-retry.decide';
import { commitJobRetries, observeJobRetries, observeJobRetryEvent } from './job-retry.observer';
import { JOB_RETRY_MEASURES } from './job-retry.measures';
import { type JobRetryConfig, jobRetryPolicy } from './job-retry.schema';

/** The job_retry policy as the engine runs it: poll every `interval`, decide purely, retry through the executor. */
export const jobRetryType: PolicyType<JobRetryConfig, JobRetrySnapshot> = {
  definition: jobRetryPolicy,
  trigger: (config) => ({ every: config.interval }),
  observe: observeJobRetries,
  decide: decideJobRetries,
  commit: commitJobRetries,
  events: {
    observe: observeJobRetryEvent,
    projects: (config, context) => selectProjects(context, config.projects, config.include_archived),
  },
  actions: jobRetryActions,
  summarize: (_config, snapshot, decisions) => {
    const candidates = snapshot.projects.reduce((sum, project) => sum + project.candidates.length, 0);
    // The storm's state line (see decide), so the pass log and the console say it.
    const storm = decisions.find((decision) => decision.key === 'storm');
    return `${count(snapshot.projects.length, 'project')}, ${count(candidates, 'new failed job')}${storm ? `; retry ${storm.reason}` : ''}`;
  },
  // Only where globs or excludes decide which projects these are: a list written out needs no echo.
  covered: (config, snapshot) =>
    config.projects.globs.length + config.projects.excludes.length > 0
      ? { projects: snapshot.projects.map((project) => String(project.project)) }
      : {},
  probes: (config) =>
    selectionProbes(config.projects, {
      what: 'jobs',
      needs: 'Developer role or higher',
      read: (client, project) => readFirstPage(client.jobs.all(project, { scope: ['failed'] }, onePage())),
    }),
  limits: (config) => ({ actionsPerPass: config.max_actions_per_run }),
  measures: JOB_RETRY_MEASURES,
};
