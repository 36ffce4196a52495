import type { ProjectRow } from '../restore/set-plan';
import { renderTable } from './table';

/** The table that ends every restore of a set: one row per project (new full path, result, detail) in path order, then a count. */
export function resultTable(groupFullPath: string, rows: readonly ProjectRow[], dryRun: boolean): string {
  const sorted = [...rows].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const table = renderTable(
    ['project', 'result', 'detail'],
    sorted.map((row) => [`${groupFullPath}/${row.path}`, row.result, row.detail]),
  );
  const done = rows.filter((row) => row.result === (dryRun ? 'would restore' : 'restored')).length;
  const count = `${done} of ${rows.length} ${rows.length === 1 ? 'project' : 'projects'} ${dryRun ? 'would be restored' : 'restored'}`;
  return `${table}\n${count}\n`;
}
