import { latestRunAtOrBefore, nextRunAfter, nextRuns } from './schedule-runs';

describe('schedule runs', () => {
  const nightly = { cron: '0 2 * * *' };

  it('counts a run exactly at `now` as the latest, not the next', () => {
    const tick = new Date('2026-11-24T02:00:00.000Z');
    expect(latestRunAtOrBefore(nightly, tick)?.toISOString()).toBe('2026-11-24T02:00:00.000Z');
    expect(nextRunAfter(nightly, tick)?.toISOString()).toBe('2026-11-25T02:00:00.000Z');
  });

  it('a moment before the tick still belongs to the day before', () => {
    const before = new Date('2026-11-24T01:59:59.999Z');
    expect(latestRunAtOrBefore(nightly, before)?.toISOString()).toBe('2026-11-23T02:00:00.000Z');
    expect(nextRunAfter(nightly, before)?.toISOString()).toBe('2026-11-24T02:00:00.000Z');
  });

  it('reads the schedule in its time zone', () => {
    const berlin = { cron: '0 2 * * *', timezone: 'Europe/Berlin' };
    expect(latestRunAtOrBefore(berlin, new Date('2026-01-15T12:00:00.000Z'))?.toISOString()).toBe(
      '2026-01-15T01:00:00.000Z',
    );
    expect(latestRunAtOrBefore(berlin, new Date('2026-07-15T12:00:00.000Z'))?.toISOString()).toBe(
      '2026-07-15T00:00:00.000Z',
    );
  });

  it('lists the next runs after a moment', () => {
    const runs = nextRuns({ cron: '0 3 * * 1-5' }, 3, new Date('2026-11-27T12:00:00.000Z'));
    expect(runs.map((run) => run.toISOString())).toEqual([
      '2026-11-30T03:00:00.000Z',
      '2026-12-01T03:00:00.000Z',
      '2026-12-02T03:00:00.000Z',
    ]);
  });
});
