import type { Trigger } from './policy';
import { nextRunAfter, nextRuns } from './schedule-runs';

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

/**
 * The shortest time between two passes: its interval, or the shortest gap between two runs of its cron schedule
 * (`0 2,3 * * *`: an hour). What a long piece of work must fit in not to run into the next pass.
 */
export function shortestTriggerGapMs(trigger: Trigger, from: Date): number {
  if ('every' in trigger) return trigger.every;
  const runs = nextRuns(trigger, CRON_RUNS_SAMPLED, from);
  let shortest = Number.POSITIVE_INFINITY;
  for (let index = 1; index < runs.length; index++) {
    shortest = Math.min(shortest, (runs[index]?.getTime() ?? 0) - (runs[index - 1]?.getTime() ?? 0));
  }
  return Number.isFinite(shortest) ? shortest : 0;
}

/**
 * The trigger's first run after `now`: the next multiple of an interval (Bull's repeat runs at multiples of `every`),
 * or the cron schedule's next run; undefined when a schedule has none left.
 */
export function nextTriggerRun(trigger: Trigger, now: Date): Date | undefined {
  if ('every' in trigger) return new Date((Math.floor(now.getTime() / trigger.every) + 1) * trigger.every);
  return nextRunAfter(trigger, now);
}

/**
 * The extra pass to queue: the earliest of the times asked for (the policy's own follow-up, a retry of open targets),
 * when it comes before the trigger's next run. Later than that it is no extra pass: the trigger's run comes first and
 * decides again, and a "next pass at" naming tomorrow for a policy that runs every hour would be false.
 */
export function extraPassAt(trigger: Trigger, asked: ReadonlyArray<Date | undefined>, now: Date): Date | undefined {
  const times = asked.filter((date): date is Date => date !== undefined).map((date) => date.getTime());
  if (times.length === 0) return undefined;
  const earliest = Math.min(...times);
  const scheduled = nextTriggerRun(trigger, now)?.getTime();
  return scheduled !== undefined && earliest >= scheduled ? undefined : new Date(earliest);
}
