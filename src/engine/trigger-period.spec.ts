import { triggerPeriodMs } from './trigger-period';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('triggerPeriodMs', () => {
  const from = new Date('2026-11-24T12:00:00Z');

  it.each([
    ['an interval', { every: 90_000 }, 90_000],
    ['a nightly schedule', { cron: '0 3 * * *' }, DAY],
    ['a weekday schedule: the weekend gap', { cron: '0 3 * * 1-5', timezone: 'Europe/Berlin' }, 3 * DAY],
    ['two runs a day, unevenly', { cron: '0 6,9 * * *' }, 21 * HOUR],
    ['a monthly schedule', { cron: '0 0 1 * *' }, 31 * DAY],
  ] as const)('%s', (_name, trigger, expected) => {
    expect(triggerPeriodMs(trigger, from)).toBe(expected);
  });
});
