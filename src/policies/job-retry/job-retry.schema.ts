import { z } from 'zod';
import { definePolicyType } from '../../config/policy-type';
import { byteSize, duration, period, projectSelection, re2List } from '../../config/validators';

/**
 * `job_retry`: retries failed CI jobs whose failure looks transient. Every field is snake_case like the forge's own
 * parameters; the rules these fields feed live in job-retry.decide.ts.
 */
const matchSchema = z
  .strictObject({
    job_names: re2List()
      .optional()
      .describe('RE2 expressions, matched anywhere in the job name; one must match. Omitted: any name.'),
    stages: re2List().optional().describe('RE2 expressions on the job stage; one must match. Omitted: any stage.'),
    refs: re2List()
      .optional()
      .describe('RE2 expressions on the branch or tag the pipeline ran for; one must match. Omitted: any ref.'),
    failure_log: re2List()
      .optional()
      .describe('RE2 expressions on the end of the job log (see log_tail); one must match. Omitted: the log is not read.'),
    allow_failure: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe('Jobs allowed to fail do not fail their pipeline, so they are left alone unless this is true.'),
    tag: z
      .boolean({ error: 'expected true (tag pipelines only) or false (branch pipelines only)' })
      .optional()
      .describe('true: only jobs of tag pipelines; false: only jobs of branch pipelines. Omitted: both.'),
  })
  .describe('Which failed jobs are retried; every given condition must hold.');

export const jobRetryPolicy = definePolicyType('job_retry', 'Retries failed CI jobs whose failure looks transient.', {
  projects: projectSelection().describe(
    'Projects to watch: by id (42), full path (acme/api) or glob ("acme/*" the group\'s own, "acme/**" with its subgroups); a quoted leading "!" excludes.',
  ),
  include_archived: z
    .boolean({ error: 'expected true or false' })
    .default(false)
    .describe('Whether globs select archived projects too; a project listed by id or path is watched even when archived.'),
  interval: period().describe('How often the failed jobs are polled.'),
  lookback: duration()
    .prefault('1h')
    .describe('How far back (by finished_at) the first poll of a project looks; later polls continue where it stopped.'),
  // prefault, not default: the empty object is parsed, so the defaults inside `match` apply.
  match: matchSchema.prefault({}),
  max_retries: z
    .number()
    .int({ error: 'max_retries must be a whole number' })
    .min(1, { error: 'max_retries must be at least 1' })
    .max(10, { error: 'max_retries must be at most 10' })
    .default(2)
    .describe('Retries per job name per pipeline, retries made by people included.'),
  delay: duration()
    .prefault('0s')
    // A retry waits in the queue (or, in `once`, in a timer, which cannot wait 25 days); a day is more than any runner
    // hiccup needs.
    .refine((ms) => ms <= 86_400_000, { error: 'must be at most 1d: a retry that waits longer is no retry of a flaky job' })
    .describe('How long to wait after deciding before retrying (at most 1d).'),
  log_tail: byteSize()
    .prefault(65_536)
    .describe('How much of the end of the log failure_log is matched against (65536, 64KiB, 1MiB).'),
  max_actions_per_run: z
    .number()
    .int({ error: 'max_actions_per_run must be a whole number' })
    .min(1, { error: 'max_actions_per_run must be at least 1' })
    .default(50)
    .describe('At most this many retries in one pass; a storm of failures is then worked off over several passes.'),
});

export type JobRetryConfig = z.output<typeof jobRetryPolicy.schema>;
