/**
 * A plain text table: columns padded to their widest cell, the last column left unpadded. `notes[i]` are lines
 * printed indented under row i (the tags a bulk deletion would remove).
 */
export function renderTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  notes: ReadonlyArray<readonly string[]> = [],
): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [
    line(header),
    ...rows.flatMap((row, index) => [line(row), ...(notes[index] ?? []).map((note) => `    ${note}`)]),
  ].join('\n');
}
