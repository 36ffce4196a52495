import type { ObserveContext } from '../../engine/policy';
import { readInflight } from './group-backup.observer';

/** A context whose policy state holds `stored` under the group's in-progress key. */
function holding(stored: unknown): ObserveContext {
  const state = { get: async (key: string) => (key === 'inflight:10' ? JSON.stringify(stored) : undefined) };
  return { state } as unknown as ObserveContext;
}

describe('group_backup: the backup in progress, as read back from the policy state', () => {
  const begun = { key: 'backup:10:2026-11-24T02:00:00.000Z', taken_at: '2026-11-24T02:00:03.000Z' };

  it('reads a record with its steps', async () => {
    const stored = {
      ...begun,
      export_requested_at: '2026-11-24T02:00:04.000Z',
      last_download_at: '2026-11-24T02:01:04.000Z',
      pruning: ['old.tar.gz'],
    };
    expect(await readInflight(holding(stored), 10)).toEqual(stored);
  });

  it.each([
    ['no key', { taken_at: begun.taken_at }],
    ['a taken_at that is not a date', { ...begun, taken_at: 'yesterday' }],
    ['an export_requested_at that is not a date', { ...begun, export_requested_at: 'soon' }],
    ['a last_download_at that is a number', { ...begun, last_download_at: 1732413600 }],
    ['a pruning list of something else', { ...begun, pruning: [3] }],
  ])(
    'ignores a record with %s, so the backup starts afresh instead of waiting on a date it cannot read',
    async (_what, stored) => {
      expect(await readInflight(holding(stored), 10)).toBeUndefined();
    },
  );

  it('finds nothing for a group without a record', async () => {
    expect(await readInflight(holding(begun), 11)).toBeUndefined();
  });
});
