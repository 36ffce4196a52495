import { nextCallAllowedMs, parseLedger } from './registry-cleanup.ledger';

describe('registry_cleanup ledger entries', () => {
  const entry = {
    last_call_at: '2025-06-02T11:00:00.000Z',
    follow_ups: 2,
    cleanup_started_at: '2025-06-02T03:00:00.000Z',
    tags_before: 9,
    planned: 4,
  };

  it('reads back what the actions write', () => {
    expect(parseLedger(JSON.stringify(entry))).toEqual(entry);
    expect(nextCallAllowedMs(entry)).toBe(Date.parse('2025-06-02T12:00:00.000Z'));
  });

  it.each<[string, string | undefined]>([
    ['nothing stored', undefined],
    ['damaged JSON', '{"last_call_at":'],
    ['not an object', '"2025-06-02T11:00:00.000Z"'],
    ['no time of the last call', JSON.stringify({ ...entry, last_call_at: undefined })],
    ['a time that is no time', JSON.stringify({ ...entry, last_call_at: 'yesterday' })],
  ])('reads %s as no entry', (_title, text) => {
    expect(parseLedger(text)).toBeUndefined();
  });

  it('keeps the time of the last call when other fields are damaged, so the hourly limit still holds', () => {
    expect(
      parseLedger(
        JSON.stringify({ last_call_at: entry.last_call_at, follow_ups: 'two', cleanup_started_at: 5, planned: -1 }),
      ),
    ).toEqual({
      last_call_at: entry.last_call_at,
      follow_ups: 0,
      cleanup_started_at: null,
      tags_before: 0,
      planned: 0,
    });
  });
});
