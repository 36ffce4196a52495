import { allRestored } from '../restore/set-plan';
import { resultTable } from './restore-table';

describe('restoring a set: the table that ends every run', () => {
  it('ends with a table of every project in path order, aligned, and a count; 0 only when every project was restored', () => {
    const rows = [
      { path: 'web', result: 'skipped', detail: 'the path is taken by project 7 (Web)' },
      { path: 'api', result: 'restored', detail: 'project 31, from projects/api.tar.gz' },
      { path: 'legacy', result: 'not in the set', detail: 'its export kept failing' },
    ] as const;
    expect(resultTable('acme-restored', rows, false)).toBe(
      [
        'project               result          detail',
        'acme-restored/api     restored        project 31, from projects/api.tar.gz',
        'acme-restored/legacy  not in the set  its export kept failing',
        'acme-restored/web     skipped         the path is taken by project 7 (Web)',
        '1 of 3 projects restored',
        '',
      ].join('\n'),
    );
    expect(allRestored(rows)).toBe(false);
    expect(allRestored([rows[1]])).toBe(true);
    expect(allRestored([{ path: 'api', result: 'would restore', detail: '' }])).toBe(true);
    expect(
      resultTable(
        'g',
        [{ path: 'api', result: 'would restore', detail: 'would import projects/api.tar.gz into g' }],
        true,
      )
        .split('\n')
        .at(-2),
    ).toBe('1 of 1 project would be restored');
  });
});
