import {
  type Dated,
  fewestToPrune,
  isoWeek,
  NO_RULES_REASON,
  planPrune,
  planRetention,
  planSetPrune,
  type RetentionRules,
  type SetItem,
} from './group-backup.retention';

/** A backup named by when it was taken, e.g. `2026-11-24T02:00Z`. */
const backup = (at: string): Dated => ({ name: at, takenAt: new Date(at) });
const backups = (...at: string[]): Dated[] => at.map(backup);

/** One backup a day at 02:00 UTC, from `first` to `last` (YYYY-MM-DD) included, oldest first. */
function dailyBackups(first: string, last: string): Dated[] {
  const result: Dated[] = [];
  for (
    let day = new Date(`${first}T02:00Z`);
    day <= new Date(`${last}T02:00Z`);
    day = new Date(day.getTime() + 86_400_000)
  ) {
    result.push(backup(`${day.toISOString().slice(0, 10)}T02:00Z`));
  }
  return result;
}

type Kept = [name: string, reasons: string[]];
const kept = (name: string, ...reasons: string[]): Kept => [name, reasons];

interface Case {
  readonly title: string;
  readonly items: readonly Dated[];
  readonly rules: RetentionRules;
  readonly timezone?: string;
  /** Written by hand, newest first. */
  readonly keep: readonly Kept[];
  readonly prune: readonly string[];
}

const A_MONTH = dailyBackups('2026-10-25', '2026-11-24');
const YEAR_END = backups(
  '2026-12-27T12:00Z',
  '2026-12-28T12:00Z',
  '2026-12-31T12:00Z',
  '2027-01-01T12:00Z',
  '2027-01-03T12:00Z',
  '2027-01-04T12:00Z',
);
const WITH_GAPS = backups(
  '2026-10-15T02:00Z',
  '2026-11-01T02:00Z',
  '2026-11-13T02:00Z',
  '2026-11-20T02:00Z',
  '2026-11-24T02:00Z',
);
const SEVERAL_A_DAY = backups(
  '2026-11-22T12:00Z',
  '2026-11-23T08:00Z',
  '2026-11-23T20:00Z',
  '2026-11-24T02:00Z',
  '2026-11-24T14:00Z',
  '2026-11-24T22:00Z',
);
// In New York (UTC-5 in November) the two newest are both on the 23rd.
const AROUND_NEW_YORK_MIDNIGHT = backups('2026-11-22T12:00Z', '2026-11-23T20:00Z', '2026-11-24T03:00Z');
// In Tokyo (UTC+9) 2026-11-29T20:00Z is Monday the 30th (week 49) and 2026-11-30T20:00Z is December 1st.
const AROUND_TOKYO_MIDNIGHT = backups(
  '2026-11-22T10:00Z',
  '2026-11-29T10:00Z',
  '2026-11-29T20:00Z',
  '2026-11-30T20:00Z',
);

const CASES: Case[] = [
  {
    // Tuesday 2026-11-24 is in week 48 (Mon 23 – Sun 29); the Sundays 22, 15 and 8 end weeks 47, 46 and 45.
    title: 'a month of daily backups with last 3, daily 7, weekly 4, monthly 2',
    items: [...A_MONTH].reverse(),
    rules: { last: 3, daily: 7, weekly: 4, monthly: 2 },
    keep: [
      kept('2026-11-24T02:00Z', 'last (1 of 3)', 'daily 2026-11-24', 'weekly 2026-W48', 'monthly 2026-11'),
      kept('2026-11-23T02:00Z', 'last (2 of 3)', 'daily 2026-11-23'),
      kept('2026-11-22T02:00Z', 'last (3 of 3)', 'daily 2026-11-22', 'weekly 2026-W47'),
      kept('2026-11-21T02:00Z', 'daily 2026-11-21'),
      kept('2026-11-20T02:00Z', 'daily 2026-11-20'),
      kept('2026-11-19T02:00Z', 'daily 2026-11-19'),
      kept('2026-11-18T02:00Z', 'daily 2026-11-18'),
      kept('2026-11-15T02:00Z', 'weekly 2026-W46'),
      kept('2026-11-08T02:00Z', 'weekly 2026-W45'),
      kept('2026-10-31T02:00Z', 'monthly 2026-10'),
    ],
    prune: [
      '2026-11-17T02:00Z',
      '2026-11-16T02:00Z',
      '2026-11-14T02:00Z',
      '2026-11-13T02:00Z',
      '2026-11-12T02:00Z',
      '2026-11-11T02:00Z',
      '2026-11-10T02:00Z',
      '2026-11-09T02:00Z',
      '2026-11-07T02:00Z',
      '2026-11-06T02:00Z',
      '2026-11-05T02:00Z',
      '2026-11-04T02:00Z',
      '2026-11-03T02:00Z',
      '2026-11-02T02:00Z',
      '2026-11-01T02:00Z',
      '2026-10-30T02:00Z',
      '2026-10-29T02:00Z',
      '2026-10-28T02:00Z',
      '2026-10-27T02:00Z',
      '2026-10-26T02:00Z',
      '2026-10-25T02:00Z',
    ],
  },
  {
    title: 'several backups a day: last counts backups, daily keeps the newest of each day',
    items: SEVERAL_A_DAY,
    rules: { last: 2, daily: 2 },
    keep: [
      kept('2026-11-24T22:00Z', 'last (1 of 2)', 'daily 2026-11-24'),
      kept('2026-11-24T14:00Z', 'last (2 of 2)'),
      kept('2026-11-23T20:00Z', 'daily 2026-11-23'),
    ],
    prune: ['2026-11-24T02:00Z', '2026-11-23T08:00Z', '2026-11-22T12:00Z'],
  },
  {
    title: 'gaps of several days: daily counts the days that have a backup',
    items: WITH_GAPS,
    rules: { daily: 3 },
    keep: [
      kept('2026-11-24T02:00Z', 'daily 2026-11-24'),
      kept('2026-11-20T02:00Z', 'daily 2026-11-20'),
      kept('2026-11-13T02:00Z', 'daily 2026-11-13'),
    ],
    prune: ['2026-11-01T02:00Z', '2026-10-15T02:00Z'],
  },
  {
    title: 'gaps of several days: weekly counts the weeks that have a backup (none in week 45)',
    items: WITH_GAPS,
    rules: { weekly: 4 },
    keep: [
      kept('2026-11-24T02:00Z', 'weekly 2026-W48'),
      kept('2026-11-20T02:00Z', 'weekly 2026-W47'),
      kept('2026-11-13T02:00Z', 'weekly 2026-W46'),
      kept('2026-11-01T02:00Z', 'weekly 2026-W44'),
    ],
    prune: ['2026-10-15T02:00Z'],
  },
  {
    title: 'ISO weeks across the year end: Monday 12-28 to Sunday 01-03 are all 2026-W53',
    items: YEAR_END,
    rules: { weekly: 3 },
    keep: [
      kept('2027-01-04T12:00Z', 'weekly 2027-W01'),
      kept('2027-01-03T12:00Z', 'weekly 2026-W53'),
      kept('2026-12-27T12:00Z', 'weekly 2026-W52'),
    ],
    prune: ['2027-01-01T12:00Z', '2026-12-31T12:00Z', '2026-12-28T12:00Z'],
  },
  {
    title: 'months across the year end',
    items: YEAR_END,
    rules: { monthly: 2 },
    keep: [kept('2027-01-04T12:00Z', 'monthly 2027-01'), kept('2026-12-31T12:00Z', 'monthly 2026-12')],
    prune: ['2027-01-03T12:00Z', '2027-01-01T12:00Z', '2026-12-28T12:00Z', '2026-12-27T12:00Z'],
  },
  {
    title: 'days in UTC',
    items: AROUND_NEW_YORK_MIDNIGHT,
    rules: { daily: 2 },
    keep: [kept('2026-11-24T03:00Z', 'daily 2026-11-24'), kept('2026-11-23T20:00Z', 'daily 2026-11-23')],
    prune: ['2026-11-22T12:00Z'],
  },
  {
    title: 'days in New York, where 03:00Z is the evening before',
    items: AROUND_NEW_YORK_MIDNIGHT,
    rules: { daily: 2 },
    timezone: 'America/New_York',
    keep: [kept('2026-11-24T03:00Z', 'daily 2026-11-23'), kept('2026-11-22T12:00Z', 'daily 2026-11-22')],
    prune: ['2026-11-23T20:00Z'],
  },
  {
    title: 'weeks in UTC',
    items: AROUND_TOKYO_MIDNIGHT,
    rules: { weekly: 2 },
    keep: [kept('2026-11-30T20:00Z', 'weekly 2026-W49'), kept('2026-11-29T20:00Z', 'weekly 2026-W48')],
    prune: ['2026-11-29T10:00Z', '2026-11-22T10:00Z'],
  },
  {
    title: 'weeks in Tokyo, where Sunday 20:00Z is Monday morning',
    items: AROUND_TOKYO_MIDNIGHT,
    rules: { weekly: 2 },
    timezone: 'Asia/Tokyo',
    keep: [kept('2026-11-30T20:00Z', 'weekly 2026-W49'), kept('2026-11-29T10:00Z', 'weekly 2026-W48')],
    prune: ['2026-11-29T20:00Z', '2026-11-22T10:00Z'],
  },
  {
    title: 'months in Tokyo, where 2026-11-30T20:00Z is December',
    items: AROUND_TOKYO_MIDNIGHT,
    rules: { monthly: 2 },
    timezone: 'Asia/Tokyo',
    keep: [kept('2026-11-30T20:00Z', 'monthly 2026-12'), kept('2026-11-29T20:00Z', 'monthly 2026-11')],
    prune: ['2026-11-29T10:00Z', '2026-11-22T10:00Z'],
  },
  {
    title: 'fewer months than asked: the oldest backup is kept too (restic ≥ 0.16, borg ≥ 1.2)',
    items: dailyBackups('2026-11-20', '2026-11-24'),
    rules: { monthly: 2 },
    keep: [
      kept('2026-11-24T02:00Z', 'monthly 2026-11'),
      kept('2026-11-20T02:00Z', 'oldest (monthly: only 1 of 2 months have a backup)'),
    ],
    prune: ['2026-11-23T02:00Z', '2026-11-22T02:00Z', '2026-11-21T02:00Z'],
  },
  {
    title: 'fewer days than asked: the oldest backup is kept too, even from a day already kept',
    items: backups('2026-11-23T01:00Z', '2026-11-23T03:00Z', '2026-11-24T01:00Z', '2026-11-24T02:00Z'),
    rules: { daily: 7 },
    keep: [
      kept('2026-11-24T02:00Z', 'daily 2026-11-24'),
      kept('2026-11-23T03:00Z', 'daily 2026-11-23'),
      kept('2026-11-23T01:00Z', 'oldest (daily: only 2 of 7 days have a backup)'),
    ],
    prune: ['2026-11-24T01:00Z'],
  },
  {
    title: 'fewer backups than last asks: all kept, no extra reason',
    items: SEVERAL_A_DAY.slice(4),
    rules: { last: 5 },
    keep: [kept('2026-11-24T22:00Z', 'last (1 of 5)'), kept('2026-11-24T14:00Z', 'last (2 of 5)')],
    prune: [],
  },
  {
    title: 'a single backup',
    items: backups('2026-11-24T02:00Z'),
    rules: { last: 1, monthly: 3 },
    keep: [kept('2026-11-24T02:00Z', 'last (1 of 1)', 'monthly 2026-11')],
    prune: [],
  },
  { title: 'no backups', items: [], rules: { last: 3, daily: 7 }, keep: [], prune: [] },
  { title: 'no backups and no rules', items: [], rules: {}, keep: [], prune: [] },
  {
    title: 'no rules: everything is kept',
    items: backups('2026-11-22T12:00Z', '2026-11-24T02:00Z', '2026-11-23T08:00Z'),
    rules: {},
    keep: [
      kept('2026-11-24T02:00Z', NO_RULES_REASON),
      kept('2026-11-23T08:00Z', NO_RULES_REASON),
      kept('2026-11-22T12:00Z', NO_RULES_REASON),
    ],
    prune: [],
  },
  {
    title: 'rules present but undefined count as no rules',
    items: backups('2026-11-24T02:00Z', '2026-11-23T08:00Z'),
    rules: { last: undefined, daily: undefined },
    keep: [kept('2026-11-24T02:00Z', NO_RULES_REASON), kept('2026-11-23T08:00Z', NO_RULES_REASON)],
    prune: [],
  },
  {
    title: 'a rule of 0 keeps nothing',
    items: backups('2026-11-24T02:00Z', '2026-11-23T08:00Z'),
    rules: { last: 0 },
    keep: [],
    prune: ['2026-11-24T02:00Z', '2026-11-23T08:00Z'],
  },
  {
    title: 'every rule 0 keeps nothing',
    items: backups('2026-11-24T02:00Z', '2026-11-23T08:00Z'),
    rules: { last: 0, daily: 0, weekly: 0, monthly: 0 },
    keep: [],
    prune: ['2026-11-24T02:00Z', '2026-11-23T08:00Z'],
  },
  {
    title: 'a rule of 0 beside another: only the other keeps',
    items: backups('2026-11-24T02:00Z', '2026-11-24T01:00Z', '2026-11-23T08:00Z'),
    rules: { last: 0, daily: 1 },
    keep: [kept('2026-11-24T02:00Z', 'daily 2026-11-24')],
    prune: ['2026-11-24T01:00Z', '2026-11-23T08:00Z'],
  },
];

describe('planRetention: restic forget semantics', () => {
  it.each(CASES.map((testCase) => [testCase.title, testCase] as const))(
    '%s',
    (_title, { items, rules, timezone, keep, prune }) => {
      const plan = planRetention(items, rules, timezone);

      expect(plan.keep.map(({ item, reasons }) => [item.name, reasons])).toEqual(keep);
      expect(plan.prune.map((item) => item.name)).toEqual(prune);
      // Every backup is either kept or pruned, never both, and the items are the ones given.
      expect([...plan.keep.map(({ item }) => item), ...plan.prune]).toHaveLength(items.length);
      for (const item of [...plan.keep.map(({ item: keptItem }) => keptItem), ...plan.prune])
        expect(items).toContain(item);
      // The newest is never pruned while some rule keeps anything.
      const newest = [...items].sort((a, b) => b.takenAt.getTime() - a.takenAt.getTime())[0];
      if (newest && Object.values(rules).some((count) => count !== undefined && count > 0)) {
        expect(plan.prune).not.toContain(newest);
        expect(plan.keep[0]?.item).toBe(newest);
      }
    },
  );

  it('defaults to UTC', () => {
    expect(planRetention(AROUND_NEW_YORK_MIDNIGHT, { daily: 2 })).toEqual(
      planRetention(AROUND_NEW_YORK_MIDNIGHT, { daily: 2 }, 'UTC'),
    );
  });

  it('keeps the items it was given, with their other fields', () => {
    const items = [{ name: 'a', takenAt: new Date('2026-11-24T02:00Z'), file: 'a.tar.gz' }];
    expect(planRetention(items, { last: 1 }).keep[0]?.item.file).toBe('a.tar.gz');
  });

  it('orders backups taken at the same instant by name, whatever the input order', () => {
    const same = [
      { name: 'b', takenAt: new Date('2026-11-24T02:00Z') },
      { name: 'a', takenAt: new Date('2026-11-24T02:00Z') },
    ];
    expect(planRetention(same, { last: 1 }).keep.map(({ item }) => item.name)).toEqual(['b']);
    expect(planRetention([...same].reverse(), { last: 1 }).keep.map(({ item }) => item.name)).toEqual(['b']);
  });

  it.each<[string, RetentionRules]>([
    ['a negative count', { daily: -1 }],
    ['a fraction', { last: 1.5 }],
    ['not a number', { weekly: Number.NaN }],
  ])('refuses %s', (_title, rules) => {
    expect(() => planRetention(A_MONTH, rules)).toThrow(RangeError);
  });

  it('refuses a backup with an invalid date, naming it', () => {
    expect(() => planRetention([{ name: 'broken', takenAt: new Date('not a date') }], { last: 1 })).toThrow(/broken/);
  });

  it('refuses an unknown time zone', () => {
    expect(() => planRetention(A_MONTH, { daily: 1 }, 'Mars/Olympus_Mons')).toThrow(RangeError);
  });
});

describe('planPrune: the keep rules over the backups really there, never pruning a short history', () => {
  const names = (items: readonly Dated[]) => items.map((item) => item.name);

  it('is the rules’ plan once there are as many backups as the largest count', () => {
    const items = backups('2026-11-24T02:00Z', '2026-11-23T02:00Z', '2026-11-22T02:00Z');
    const plan = planPrune(items, { last: 2 });
    expect([names(plan.keep), names(plan.prune), plan.held]).toEqual([
      ['2026-11-24T02:00Z', '2026-11-23T02:00Z'],
      ['2026-11-22T02:00Z'],
      undefined,
    ]);
  });

  it('prunes nothing while fewer backups exist than the largest count, and says why', () => {
    // daily 5 alone keeps the newest and the oldest of one day and prunes the two between.
    const sameDay = backups('2026-11-24T20:00Z', '2026-11-24T14:00Z', '2026-11-24T08:00Z', '2026-11-24T02:00Z');
    expect(names(planRetention(sameDay, { daily: 5 }).prune)).toEqual(['2026-11-24T14:00Z', '2026-11-24T08:00Z']);
    const plan = planPrune(sameDay, { daily: 5, last: 1 });
    expect([names(plan.keep), names(plan.prune)]).toEqual([names(sameDay), []]);
    expect(plan.held).toBe('nothing pruned: 4 backups on disk, fewer than 5 (the largest keep count)');
  });

  it('says nothing when the rules prune nothing anyway', () => {
    expect(planPrune(backups('2026-11-24T02:00Z'), { last: 3 }).held).toBeUndefined();
  });

  it('keeps everything, newest first, without rules', () => {
    const plan = planPrune(backups('2026-11-22T02:00Z', '2026-11-24T02:00Z'), undefined);
    expect([names(plan.keep), names(plan.prune), plan.held]).toEqual([
      ['2026-11-24T02:00Z', '2026-11-22T02:00Z'],
      [],
      undefined,
    ]);
  });

  it.each<[RetentionRules, number]>([
    [{ last: 3 }, 3],
    [{ daily: 7, weekly: 4, monthly: 6 }, 7],
    [{ last: 2, monthly: 12 }, 12],
    [{ daily: 0 }, 0],
  ])('the fewest backups before a prune under %j is %i', (rules, fewest) => {
    expect(fewestToPrune(rules)).toBe(fewest);
  });
});

describe('planSetPrune: the keep rules over backup sets, counting complete sets only', () => {
  const complete = (at: string): SetItem => ({ name: at, takenAt: new Date(at), state: 'complete' });
  const partial = (at: string): SetItem => ({ name: at, takenAt: new Date(at), state: 'partial' });
  const names = (items: readonly Dated[]) => items.map((item) => item.name);
  const outcome = (plan: { keep: readonly Dated[]; prune: readonly Dated[]; held?: string }) => ({
    keep: names(plan.keep),
    prune: names(plan.prune),
    held: plan.held,
  });

  it('counts complete sets only: a partial set does not push a complete one out of `last`', () => {
    const items = [
      complete('2026-11-24T02:00Z'),
      partial('2026-11-23T02:00Z'),
      complete('2026-11-22T02:00Z'),
      complete('2026-11-21T02:00Z'),
    ];
    // Counted over every set, last 2 would keep the partial one and prune the 22nd's.
    expect(names(planPrune(items, { last: 2 }).keep)).toEqual(['2026-11-24T02:00Z', '2026-11-23T02:00Z']);
    expect(outcome(planSetPrune(items, { last: 2 }))).toEqual({
      keep: ['2026-11-24T02:00Z', '2026-11-22T02:00Z'],
      prune: ['2026-11-23T02:00Z', '2026-11-21T02:00Z'],
      held: undefined,
    });
  });

  it('keeps the newest complete set of each day, a partial set of a newer hour of the same day not taking its place', () => {
    const items = [
      complete('2026-11-24T14:00Z'),
      partial('2026-11-24T10:00Z'),
      complete('2026-11-24T02:00Z'),
      complete('2026-11-23T02:00Z'),
      complete('2026-11-22T02:00Z'),
    ];
    expect(outcome(planSetPrune(items, { daily: 2 }))).toEqual({
      keep: ['2026-11-24T14:00Z', '2026-11-23T02:00Z'],
      prune: ['2026-11-24T10:00Z', '2026-11-24T02:00Z', '2026-11-22T02:00Z'],
      held: undefined,
    });
  });

  it('keeps a partial set while no newer complete one exists, and prunes it once one does', () => {
    const before = [partial('2026-11-24T02:00Z'), complete('2026-11-23T02:00Z'), complete('2026-11-22T02:00Z')];
    expect(outcome(planSetPrune(before, { last: 1 }))).toEqual({
      keep: ['2026-11-24T02:00Z', '2026-11-23T02:00Z', '2026-11-22T02:00Z'],
      prune: [],
      held: 'nothing pruned: the newest set, 2026-11-24T02:00Z, is partial',
    });
    const after = [complete('2026-11-25T02:00Z'), ...before];
    expect(outcome(planSetPrune(after, { last: 1 }))).toEqual({
      keep: ['2026-11-25T02:00Z'],
      prune: ['2026-11-24T02:00Z', '2026-11-23T02:00Z', '2026-11-22T02:00Z'],
      held: undefined,
    });
  });

  it('prunes partial sets older than the newest complete one even when the rules prune no complete set', () => {
    const items = [
      complete('2026-11-24T02:00Z'),
      partial('2026-11-23T02:00Z'),
      partial('2026-11-22T02:00Z'),
      complete('2026-11-21T02:00Z'),
    ];
    expect(outcome(planSetPrune(items, { last: 2 }))).toEqual({
      keep: ['2026-11-24T02:00Z', '2026-11-21T02:00Z'],
      prune: ['2026-11-23T02:00Z', '2026-11-22T02:00Z'],
      held: undefined,
    });
  });

  it('keeps a partial set taken at the same instant as the newest complete one, which is not newer than it', () => {
    // Of two sets of one instant the one of the greater name comes first: here the complete one, so nothing is held.
    const items = [
      { ...partial('2026-11-24T02:00Z'), name: 'a' },
      { ...complete('2026-11-24T02:00Z'), name: 'b' },
    ];
    expect(outcome(planSetPrune(items, { last: 1 }))).toEqual({ keep: ['b', 'a'], prune: [], held: undefined });
  });

  it('prunes nothing while the newest set is partial, and names it in held', () => {
    // The rules alone would keep the 23rd's only: a night whose set could not finish costs no older complete one.
    const items = [
      complete('2026-11-21T02:00Z'),
      complete('2026-11-22T02:00Z'),
      complete('2026-11-23T02:00Z'),
      partial('2026-11-24T02:00Z'),
    ];
    expect(outcome(planSetPrune(items, { last: 1 }))).toEqual({
      keep: ['2026-11-24T02:00Z', '2026-11-23T02:00Z', '2026-11-22T02:00Z', '2026-11-21T02:00Z'],
      prune: [],
      held: 'nothing pruned: the newest set, 2026-11-24T02:00Z, is partial',
    });
  });

  it('prunes nothing when every set is partial', () => {
    const items = [partial('2026-11-24T02:00Z'), partial('2026-11-23T02:00Z')];
    expect(outcome(planSetPrune(items, { last: 1 }))).toEqual({
      keep: ['2026-11-24T02:00Z', '2026-11-23T02:00Z'],
      prune: [],
      held: 'nothing pruned: the newest set, 2026-11-24T02:00Z, is partial',
    });
  });

  it('keeps everything, partial sets too, newest first, without rules', () => {
    const items = [
      complete('2026-11-22T02:00Z'),
      partial('2026-11-23T02:00Z'),
      complete('2026-11-24T02:00Z'),
      partial('2026-11-25T02:00Z'),
    ];
    expect(outcome(planSetPrune(items, undefined))).toEqual({
      keep: ['2026-11-25T02:00Z', '2026-11-24T02:00Z', '2026-11-23T02:00Z', '2026-11-22T02:00Z'],
      prune: [],
      held: undefined,
    });
  });

  it('carries over the held of planPrune: fewer complete sets than the largest keep count prune nothing, partial sets neither', () => {
    // Four complete sets of one day: daily 5 alone would prune the two between the newest and the oldest.
    const items = [
      complete('2026-11-24T20:00Z'),
      complete('2026-11-24T14:00Z'),
      partial('2026-11-24T10:00Z'),
      complete('2026-11-24T08:00Z'),
      complete('2026-11-24T02:00Z'),
    ];
    expect(outcome(planSetPrune(items, { daily: 5 }))).toEqual({
      keep: ['2026-11-24T20:00Z', '2026-11-24T14:00Z', '2026-11-24T10:00Z', '2026-11-24T08:00Z', '2026-11-24T02:00Z'],
      prune: [],
      held: 'nothing pruned: 4 backups on disk, fewer than 5 (the largest keep count)',
    });
  });

  it('counts complete sets only towards the largest keep count, however many partial ones there are', () => {
    const items = [
      complete('2026-11-24T20:00Z'),
      partial('2026-11-24T16:00Z'),
      partial('2026-11-24T12:00Z'),
      complete('2026-11-24T08:00Z'),
      complete('2026-11-24T02:00Z'),
    ];
    // Five sets, but three complete ones under last 1 and daily 4: the rules' prune of two waits.
    expect(planSetPrune(items, { last: 1, daily: 4 }).held).toBe(
      'nothing pruned: 3 backups on disk, fewer than 4 (the largest keep count)',
    );
  });

  it('plans nothing for no sets', () => {
    expect(outcome(planSetPrune([], { last: 3 }))).toEqual({ keep: [], prune: [], held: undefined });
  });

  it('gives back the items it was given, with their other fields', () => {
    const items = [
      { ...complete('2026-11-24T02:00Z'), label: '2026-11-24T020000Z/' },
      { ...partial('2026-11-23T02:00Z'), label: '2026-11-23T020000Z/' },
    ];
    const plan = planSetPrune(items, { last: 1 });
    expect([plan.keep[0], plan.prune[0]]).toEqual([items[0], items[1]]);
    expect(plan.keep[0]).toBe(items[0]);
  });

  it('applies last, weekly and monthly together to the complete sets, and prunes every partial set older than the newest', () => {
    const items = [
      complete('2026-11-24T02:00Z'),
      partial('2026-11-23T12:00Z'),
      complete('2026-11-23T02:00Z'),
      complete('2026-11-16T02:00Z'),
      partial('2026-11-10T02:00Z'),
      complete('2026-11-09T02:00Z'),
      complete('2026-10-31T02:00Z'),
    ];
    const plan = planSetPrune(items, { last: 1, weekly: 2, monthly: 2 });
    expect(outcome(plan)).toEqual({
      keep: ['2026-11-24T02:00Z', '2026-11-16T02:00Z', '2026-10-31T02:00Z'],
      prune: ['2026-11-23T12:00Z', '2026-11-23T02:00Z', '2026-11-10T02:00Z', '2026-11-09T02:00Z'],
      held: undefined,
    });
  });
});

describe('isoWeek', () => {
  it.each<[number, number, number, string]>([
    [2026, 11, 24, '2026-W48'],
    [2026, 12, 27, '2026-W52'],
    [2026, 12, 28, '2026-W53'],
    [2026, 12, 31, '2026-W53'],
    [2027, 1, 1, '2026-W53'],
    [2027, 1, 3, '2026-W53'],
    [2027, 1, 4, '2027-W01'],
    [2024, 12, 30, '2025-W01'],
    [2025, 12, 29, '2026-W01'],
    [2026, 1, 1, '2026-W01'],
    [2021, 1, 3, '2020-W53'],
  ])('%i-%i-%i is in %s', (year, month, day, week) => {
    expect(isoWeek(year, month, day)).toBe(week);
  });
});
