/**
 * Human-readable intervals as the forge reads them for `older_than` (it uses the ChronicDuration gem): a sequence of
 * `<number><unit>` parts such as `1h`, `7d`, `2w`, `1month`, `1h 30m`. A month is 30 days and a year 365.25 days,
 * as in ChronicDuration. Also used by the control API to advance the sandbox clock.
 */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const UNITS: ReadonlyArray<readonly [readonly string[], number]> = [
  [['s', 'sec', 'secs', 'second', 'seconds'], SECOND],
  [['m', 'min', 'mins', 'minute', 'minutes'], MINUTE],
  [['h', 'hr', 'hrs', 'hour', 'hours'], HOUR],
  [['d', 'day', 'days'], DAY],
  [['w', 'wk', 'wks', 'week', 'weeks'], 7 * DAY],
  [['mo', 'mon', 'mons', 'month', 'months'], 30 * DAY],
  [['y', 'yr', 'yrs', 'year', 'years'], 365.25 * DAY],
];

const UNIT_MS = new Map<string, number>(UNITS.flatMap(([names, ms]) => names.map((n) => [n, ms] as const)));

/** Milliseconds in `text`, or undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === '') return undefined;
  const part = /(\d+(?:\.\d+)?)\s*([a-z]+)\s*,?\s*/y;
  let total = 0;
  let index = 0;
  while (index < trimmed.length) {
    part.lastIndex = index;
    const match = part.exec(trimmed);
    if (!match) return undefined;
    const unit = UNIT_MS.get(match[2]);
    if (unit === undefined) return undefined;
    total += Number(match[1]) * unit;
    index = part.lastIndex;
  }
  return total;
}
