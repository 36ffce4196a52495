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
      .describe(
        'RE2 expressions on the end of the job log (see log_tail); one must match. Omitted: the log is not read.',
      ),
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

const count = (what: string, min: number) =>
  z
    .number()
    .int({ error: `${what} must be a whole number` })
    .min(min, { error: `${what} must be at least ${min}` });

/**
 * Storm control (docs/policies.md, "Retry storms"): when one failure signature arrives across many projects at once,
 * or most of the bot's own retries fail again with it, retries are held and one probe job is retried at a time.
 */
const stormSchema = z
  .strictObject({
    enabled: z
      .boolean({ error: 'expected true or false' })
      .default(true)
      .describe('Whether storms are detected at all.'),
    failures: count('storm.failures', 2)
      .default(50)
      .describe(
        'Failures with one signature, each of which would be retried, that start a storm when they finish within `within`...',
      ),
    projects: count('storm.projects', 1).default(10).describe('...in at least this many projects.'),
    within: duration({ min: 1000 })
      .prefault('5m')
      .describe("The window failures and the bot's own retries are counted in."),
    failed_again: z
      .number({ error: 'expected a fraction such as 0.5' })
      .gt(0, { error: 'storm.failed_again must be above 0' })
      .max(1, { error: 'storm.failed_again must be at most 1' })
      .default(0.5)
      .describe(
        "A storm also starts when more than this share of the bot's retries within `within` failed again with one signature...",
      ),
    min_retries: count('storm.min_retries', 1).default(10).describe('...once it made at least this many.'),
    probe_backoff: duration({ min: 1000 })
      .prefault('1m')
      .describe('How long after a probe failed again the next one is retried, doubling each time...'),
    probe_backoff_max: duration({ min: 1000 }).prefault('8m').describe('...up to this.'),
    calm_after: duration({ min: 1000 })
      .prefault('15m')
      .describe('A storm also ends when no failure with its signature (a new one or a probe) was seen for this long.'),
  })
  .refine((storm) => storm.calm_after > storm.probe_backoff_max, {
    error:
      'storm.calm_after must be longer than storm.probe_backoff_max: a probe that keeps failing must keep the storm going',
    path: ['calm_after'],
  })
  .describe('Retry storm control: hold retries while one failure hits many projects, probe one job at a time.');

export const jobRetryPolicy = definePolicyType('job_retry', 'Retries failed CI jobs whose failure looks transient.', {
  projects: projectSelection().describe(
    'Projects to watch: by id (42), full path (acme/api) or glob ("acme/*" the group\'s own, "acme/**" with its subgroups); a quoted leading "!" excludes.',
  ),
  include_archived: z
    .boolean({ error: 'expected true or false' })
    .default(false)
    .describe(
      'Whether globs select archived projects too; a project listed by id or path is watched even when archived.',
    ),
  interval: period().describe('How often the failed jobs are polled.'),
  lookback: duration()
    .prefault('1h')
    .describe(
      'How far back (by finished_at) the first poll of a project looks; later polls continue where it stopped.',
    ),
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
    .refine((ms) => ms <= 86_400_000, {
      error: 'must be at most 1d: a retry that waits longer is no retry of a flaky job',
    })
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
  // prefault, not default: the empty object is parsed, so the defaults inside `storm` apply.
  storm: stormSchema.prefault({}),
});

export type JobRetryConfig = z.output<typeof jobRetryPolicy.schema>;
