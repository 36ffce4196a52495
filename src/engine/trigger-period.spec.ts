import { extraPassAt, nextTriggerRun, triggerPeriodMs } from './trigger-period';

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

describe('the next pass', () => {
  const now = new Date('2026-11-24T12:20:00Z');
  const at = (iso: string) => new Date(iso);

  it.each([
    ['an interval: its next multiple, as Bull repeats it', { every: HOUR }, '2026-11-24T13:00:00.000Z'],
    ['a 5-minute interval', { every: 5 * 60_000 }, '2026-11-24T12:25:00.000Z'],
    ['a nightly cron schedule', { cron: '0 3 * * *' }, '2026-11-25T03:00:00.000Z'],
    ['@daily in a time zone', { cron: '@daily', timezone: 'Europe/Berlin' }, '2026-11-24T23:00:00.000Z'],
  ] as const)('of the trigger, %s', (_name, trigger, expected) => {
    expect(nextTriggerRun(trigger, now)?.toISOString()).toBe(expected);
  });

  it('is an extra pass only before the trigger runs again: a key rotation every 1h asking for tomorrow gets none', () => {
    // The grace period of an old key ends tomorrow; the hourly pass comes first and asks again when it is near.
    expect(extraPassAt({ every: HOUR }, [at('2026-11-25T12:21:00Z')], now)).toBeUndefined();
    expect(extraPassAt({ every: HOUR }, [at('2026-11-24T12:50:00Z')], now)?.toISOString()).toBe(
      '2026-11-24T12:50:00.000Z',
    );
    // Asked for at the very time the trigger runs: that run is the pass.
    expect(extraPassAt({ every: HOUR }, [at('2026-11-24T13:00:00Z')], now)).toBeUndefined();
  });

  it('takes the earliest of the times asked for, for a cron schedule too', () => {
    const nightly = { cron: '0 3 * * *' };
    expect(
      extraPassAt(nightly, [undefined, at('2026-11-24T14:00:00Z'), at('2026-11-24T12:25:00Z')], now)?.toISOString(),
    ).toBe('2026-11-24T12:25:00.000Z');
    expect(extraPassAt(nightly, [at('2026-11-25T04:00:00Z')], now)).toBeUndefined();
    expect(extraPassAt(nightly, [undefined], now)).toBeUndefined();
  });

  it('for a schedule that never runs (30 February), any time asked for', () => {
    expect(nextTriggerRun({ cron: '0 0 30 2 *' }, now)).toBeUndefined();
    expect(extraPassAt({ cron: '0 0 30 2 *' }, [at('2027-06-01T00:00:00Z')], now)?.toISOString()).toBe(
      '2027-06-01T00:00:00.000Z',
    );
  });
});
