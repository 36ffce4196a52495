/**
 * Which backups to keep, by restic's `forget` rules, so that `keep:` means what restic and borg users expect. Pure: no
 * I/O, no clock. The rules: docs/policies.md, `group_backup`, "Keep rules".
 */

export interface RetentionRules {
  readonly last?: number;
  readonly daily?: number;
  readonly weekly?: number;
  readonly monthly?: number;
}

export interface Dated {
  readonly name: string;
  readonly takenAt: Date;
}

export interface RetentionPlan<T extends Dated> {
  /** Newest first, each with why it is kept: `last (1 of 3)`, `daily 2026-11-24`, `weekly 2026-W48`, `monthly 2026-11`. */
  readonly keep: readonly { item: T; reasons: string[] }[];
  /** Newest first. */
  readonly prune: readonly T[];
}

/** The reason given to every backup when there are no rules. */
export const NO_RULES_REASON = 'no keep rules: every backup is kept';

type RuleName = keyof RetentionRules;
type PeriodRule = Exclude<RuleName, 'last'>;

/** In restic's order, which is the order reasons are listed in. */
const RULES: readonly RuleName[] = ['last', 'daily', 'weekly', 'monthly'];

const PERIOD_NOUNS: Record<PeriodRule, string> = { daily: 'days', weekly: 'weeks', monthly: 'months' };

/** A rule while the backups are walked: how many periods it still keeps, and the period of the last one kept. */
interface Counter {
  readonly rule: RuleName;
  readonly wanted: number;
  left: number;
  lastPeriod: string | undefined;
}

export function planRetention<T extends Dated>(
  items: readonly T[],
  rules: RetentionRules,
  timezone = 'UTC',
): RetentionPlan<T> {
  for (const rule of RULES) assertCount(rule, rules[rule]);
  for (const item of items) {
    if (Number.isNaN(item.takenAt.getTime())) throw new RangeError(`backup ${item.name} has an invalid date`);
  }
  // Ties (same instant) are ordered by name, newest-looking first, so that the plan does not depend on input order.
  const sorted = [...items].sort(
    (a, b) => b.takenAt.getTime() - a.takenAt.getTime() || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0),
  );

  if (RULES.every((rule) => rules[rule] === undefined)) {
    return { keep: sorted.map((item) => ({ item, reasons: [NO_RULES_REASON] })), prune: [] };
  }

  const periodOf = periodsIn(timezone);
  const counters: Counter[] = RULES.flatMap((rule) => {
    const wanted = rules[rule] ?? 0;
    return wanted > 0 ? [{ rule, wanted, left: wanted, lastPeriod: undefined }] : [];
  });
  const keep: { item: T; reasons: string[] }[] = [];
  const prune: T[] = [];
  sorted.forEach((item, index) => {
    const isOldest = index === sorted.length - 1;
    const reasons: string[] = [];
    for (const counter of counters) {
      if (counter.left === 0) continue;
      // `last` gives each backup a period of its own, so it keeps the n newest whatever their dates.
      const period = counter.rule === 'last' ? `#${index}` : periodOf(counter.rule, item.takenAt);
      if (period !== counter.lastPeriod) {
        reasons.push(
          counter.rule === 'last'
            ? `last (${counter.wanted - counter.left + 1} of ${counter.wanted})`
            : `${counter.rule} ${period}`,
        );
      } else if (isOldest && counter.rule !== 'last') {
        const filled = counter.wanted - counter.left;
        reasons.push(
          `oldest (${counter.rule}: only ${filled} of ${counter.wanted} ${PERIOD_NOUNS[counter.rule]} have a backup)`,
        );
      } else {
        continue;
      }
      counter.lastPeriod = period;
      counter.left -= 1;
    }
    if (reasons.length > 0) keep.push({ item, reasons });
    else prune.push(item);
  });

  // Every rule with a count starts with the newest backup's period, so the newest is always kept: were it not, a bug
  // here would delete the only recent backup, which is worth failing loudly for.
  if (counters.length > 0 && sorted.length > 0 && keep[0]?.item !== sorted[0]) {
    throw new Error(`retention would prune the newest backup ${sorted[0].name}`);
  }
  return { keep, prune };
}

function assertCount(rule: RuleName, count: number | undefined): void {
  if (count !== undefined && !(Number.isInteger(count) && count >= 0)) {
    throw new RangeError(`keep.${rule} must be a whole number of backups, 0 or more (got ${count})`);
  }
}

/** The day (`2026-11-24`), ISO week (`2026-W48`) or month (`2026-11`) an instant falls in, in `timezone`. */
function periodsIn(timezone: string): (rule: PeriodRule, at: Date) => string {
  // One formatter for the whole plan: creating one per backup is the slow part of Intl. Throws on an unknown zone.
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    calendar: 'gregory',
    numberingSystem: 'latn',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
  });
  return (rule, at) => {
    const parts = format.formatToParts(at);
    const part = (type: Intl.DateTimeFormatPartTypes) =>
      Number(parts.find((candidate) => candidate.type === type)?.value);
    const [year, month, day] = [part('year'), part('month'), part('day')];
    if (rule === 'daily') return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
    if (rule === 'monthly') return `${pad(year, 4)}-${pad(month, 2)}`;
    return isoWeek(year, month, day);
  };
}

/**
 * The ISO 8601 week of a calendar date, as `YYYY-Www`: weeks start on Monday and belong to the year of their
 * Thursday, so the first days of January can be in the previous year's last week (2027-01-01 is 2026-W53) and the
 * last days of December in the next year's first week (2024-12-30 is 2025-W01).
 */
export function isoWeek(year: number, month: number, day: number): string {
  const date = new Date(Date.UTC(2000, 0, 1));
  date.setUTCFullYear(year, month - 1, day);
  const mondayBased = (date.getUTCDay() + 6) % 7;
  date.setUTCDate(date.getUTCDate() - mondayBased + 3);
  const weekYear = date.getUTCFullYear();
  const startOfWeekYear = new Date(Date.UTC(2000, 0, 1));
  startOfWeekYear.setUTCFullYear(weekYear, 0, 1);
  // Thursdays are 7 days apart and week 1's is among January's first 7 days.
  const week = 1 + Math.floor((date.getTime() - startOfWeekYear.getTime()) / (7 * 86_400_000));
  return `${pad(weekYear, 4)}-W${pad(week, 2)}`;
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

/** What a prune removes, once its archives are known to be on disk: the plan of the rules, or nothing (`held` says why). */
export interface PrunePlan<T extends Dated> {
  /** Newest first. */
  readonly keep: readonly T[];
  /** Newest first. */
  readonly prune: readonly T[];
  /** Why nothing is pruned although the rules would prune: too short a history. */
  readonly held?: string;
}

/**
 * The fewest backups that must exist before any is pruned: the largest count among the rules. Fewer than that is a
 * history shorter than one rule alone asks to keep (a person removed archives, downloads failed for days): nothing
 * goes then, not even a second backup of one day, until the history has grown back. Restic would prune such
 * duplicates at once; a backup kept a few days longer is cheap, one pruned from a thin history is not.
 */
export function fewestToPrune(rules: RetentionRules): number {
  return Math.max(0, ...RULES.map((rule) => rules[rule] ?? 0));
}

/** `planRetention` over the backups really there, with no prune while fewer than `fewestToPrune` of them exist. */
export function planPrune<T extends Dated>(
  items: readonly T[],
  rules: RetentionRules | undefined,
  timezone?: string,
): PrunePlan<T> {
  if (!rules) return { keep: sortedNewestFirst(items), prune: [] };
  const plan = planRetention(items, rules, timezone);
  const fewest = fewestToPrune(rules);
  if (plan.prune.length > 0 && items.length < fewest) {
    return {
      keep: sortedNewestFirst(items),
      prune: [],
      held: `nothing pruned: ${items.length} backups on disk, fewer than ${fewest} (the largest keep count)`,
    };
  }
  return { keep: plan.keep.map(({ item }) => item), prune: plan.prune };
}

function sortedNewestFirst<T extends Dated>(items: readonly T[]): T[] {
  return [...items].sort(
    (a, b) => b.takenAt.getTime() - a.takenAt.getTime() || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0),
  );
}

/** A backup set for retention: complete (the group and every project), or partial. */
export interface SetItem extends Dated {
  readonly state: 'complete' | 'partial';
}

/**
 * `planPrune` over backup sets: the keep rules count complete sets only (a partial set is not a backup of the whole
 * tree, and must not push a complete one out); a partial set is kept until a complete set newer than it exists, then
 * pruned; and nothing at all is pruned while the newest set is partial, so a night whose set could not finish never
 * costs an older complete one.
 */
export function planSetPrune<T extends SetItem>(
  items: readonly T[],
  rules: RetentionRules | undefined,
  timezone?: string,
): PrunePlan<T> {
  const sorted = sortedNewestFirst(items);
  if (!rules) return { keep: sorted, prune: [] };
  if (sorted[0]?.state === 'partial')
    return { keep: sorted, prune: [], held: `nothing pruned: the newest set, ${sorted[0].name}, is partial` };
  const complete = sorted.filter((item) => item.state === 'complete');
  const plan = planPrune(complete, rules, timezone);
  if (plan.held) return { keep: sorted, prune: [], held: plan.held };
  const newestComplete = complete[0]?.takenAt.getTime() ?? Number.NEGATIVE_INFINITY;
  const pruned = new Set<T>([
    ...plan.prune,
    ...sorted.filter((item) => item.state === 'partial' && item.takenAt.getTime() < newestComplete),
  ]);
  return { keep: sorted.filter((item) => !pruned.has(item)), prune: sorted.filter((item) => pruned.has(item)) };
}
