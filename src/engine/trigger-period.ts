import type { Trigger } from './policy';
import { nextRuns } from './schedule-runs';

/** Runs of a cron schedule looked at: a year of a weekly schedule, enough to see the gaps of any common one. */
const CRON_RUNS_SAMPLED = 60;

/**
 * How long a policy may go between two passes when all is well: its interval, or the longest gap between two runs of
 * its cron schedule (`0 3 * * 1-5` has a 3-day gap over the weekend). Alerts on "no successful pass for 3 periods"
 * use it, so a weekday job does not page on a Monday morning.
 */
export function triggerPeriodMs(trigger: Trigger, from: Date): number {
  if ('every' in trigger) return trigger.every;
  const runs = nextRuns(trigger, CRON_RUNS_SAMPLED, from);
  let longest = 0;
  for (let index = 1; index < runs.length; index++) {
    longest = Math.max(longest, (runs[index]?.getTime() ?? 0) - (runs[index - 1]?.getTime() ?? 0));
  }
  return longest;
}
