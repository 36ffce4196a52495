import { Cron } from 'croner';

/**
 * The runs of a cron schedule around a moment, for the deciders that ask "has this period's run been done?". Pure:
 * croner only computes.
 */

export interface CronSchedule {
  readonly cron: string;
  /** IANA time zone; UTC when absent. */
  readonly timezone?: string;
}

function cronOf(schedule: CronSchedule): Cron {
  return new Cron(schedule.cron, { paused: true, ...(schedule.timezone ? { timezone: schedule.timezone } : {}) });
}

/**
 * The schedule's latest run at or before `now`. croner's previousRuns looks strictly before its moment, so a pass that
 * starts exactly on the tick would otherwise count the tick's run as the next one and skip a whole period.
 */
export function latestRunAtOrBefore(schedule: CronSchedule, now: Date): Date | undefined {
  return cronOf(schedule).previousRuns(1, new Date(now.getTime() + 1))[0];
}

/** The schedule's first run after `now`, or undefined when it has none left. */
export function nextRunAfter(schedule: CronSchedule, now: Date): Date | undefined {
  return cronOf(schedule).nextRun(now) ?? undefined;
}

/** The schedule's next `count` runs after `from`. */
export function nextRuns(schedule: CronSchedule, count: number, from: Date): Date[] {
  return cronOf(schedule).nextRuns(count, from);
}
