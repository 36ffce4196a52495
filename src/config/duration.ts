/**
 * Durations as written in the policy file: a whole number and one unit, e.g. `30s`, `5m`, `2h`, `14d`, `2w`,
 * `1month`. These are the forms the forge itself accepts for `older_than`; a month counts as 30 days as it does there.
 */
const UNIT_MS = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 7 * 86_400_000,
  month: 30 * 86_400_000,
  months: 30 * 86_400_000,
} as const;

const DURATION = /^(\d+)(s|m|h|d|w|months?)$/;

export const DURATION_HINT = 'expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month';

/** Milliseconds, or undefined when `text` is not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const ms = amount * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The shortest exact spelling of `ms` in the units above, for messages and reasons (`90000` → `90s`). */
export function formatDuration(ms: number): string {
  const units: Array<[string, number]> = [
    ['w', UNIT_MS.w],
    ['d', UNIT_MS.d],
    ['h', UNIT_MS.h],
    ['m', UNIT_MS.m],
    ['s', UNIT_MS.s],
  ];
  for (const [unit, size] of units) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
