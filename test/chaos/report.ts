import { writeFileSync } from 'node:fs';
import { passed, type Row } from './compare';
import { JUDGE_ROW_PREFIX } from './judges';
import type { ScenarioResult } from './scenario';

/** The table on standard output and the JSON summary CI reads. */

const COLUMNS: { title: string; value: (row: Row) => string | number }[] = [
  { title: 'SCENARIO', value: (r) => r.scenario },
  { title: 'POLICY', value: (r) => r.policy },
  { title: 'FAULTS', value: (r) => r.faults },
  { title: 'EXPECTED', value: (r) => r.expected },
  { title: 'DONE', value: (r) => r.done },
  { title: 'DUPLICATED', value: (r) => r.duplicated },
  { title: 'MISSING', value: (r) => r.missing },
  { title: 'EXTRA', value: (r) => r.extra },
  { title: 'RESULT', value: (r) => (passed(r) ? 'ok' : 'FAIL') },
];

/** The humans scenario's own figures (`EXPECTED` and `DONE` there count the targets the person left alone). */
const HUMAN_COLUMNS: { title: string; value: (row: Row) => string | number }[] = [
  { title: 'SCENARIO', value: (r) => r.scenario },
  { title: 'POLICY', value: (r) => r.policy },
  { title: 'ACTIONS', value: (r) => r.humans?.actions ?? 0 },
  { title: 'INTERVENTIONS', value: (r) => r.humans?.interventions ?? 0 },
  { title: 'STALE', value: (r) => r.humans?.stale ?? 0 },
  { title: 'REFUSED', value: (r) => r.humans?.refused ?? 0 },
  { title: 'CHECKS', value: (r) => r.humans?.checks ?? 0 },
  { title: 'VIOLATIONS', value: (r) => r.humans?.violations ?? 0 },
  { title: 'RACES', value: (r) => r.humans?.races ?? 0 },
  { title: 'RESULT', value: (r) => (passed(r) ? 'ok' : 'FAIL') },
];

export function table(rows: readonly Row[]): string {
  const humans = rows.filter((row) => row.humans);
  // The rule judges' rows have no targets of their own: they show in the humans table only.
  const main = render(
    COLUMNS,
    rows.filter((row) => !row.policy.startsWith(JUDGE_ROW_PREFIX)),
  );
  return humans.length === 0 ? main : `${main}\n\n${render(HUMAN_COLUMNS, humans)}`;
}

function render(columns: typeof COLUMNS, rows: readonly Row[]): string {
  const cells = [columns.map((c) => c.title), ...rows.map((row) => columns.map((c) => String(c.value(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  return cells
    .map((line) =>
      line
        .map((cell, i) => (i >= 2 && i < columns.length - 1 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The evidence of every failing row: what the forge holds or recorded, one line per difference (bounded). */
export function differences(rows: readonly Row[], perRow = 12): string {
  const lines: string[] = [];
  for (const row of rows) {
    if (passed(row)) continue;
    lines.push(`${row.scenario} / ${row.policy}:`);
    for (const detail of row.details.slice(0, perRow)) lines.push(`  - ${detail}`);
    if (row.details.length > perRow) lines.push(`  - … ${row.details.length - perRow} more (see the JSON summary)`);
  }
  return lines.join('\n');
}

/**
 * The humans scenario's races, whatever the row's result: writes a person contradicted while the daemon was re-reading
 * them. They do not fail a row (no client can close that window), and are shown so that a run that has many says so.
 */
export function races(rows: readonly Row[]): string {
  const lines = rows.flatMap((row) =>
    row.details
      .filter((detail) => detail.startsWith('race: '))
      .map((detail) => `${row.scenario} / ${row.policy}: ${detail.slice('race: '.length)}`),
  );
  return lines.length === 0 ? '' : `races (counted, not failed):\n${lines.map((line) => `  - ${line}`).join('\n')}`;
}

export interface Summary {
  seed: number;
  started_at: string;
  wall_ms: number;
  log_dir: string;
  daemon: string;
  passed: number;
  failed: number;
  rows: (Row & { passed: boolean })[];
  scenarios: {
    name: string;
    wall_ms: number;
    converged: boolean;
    clock_steps: number;
    daemon_starts: number;
    requests: number;
    faults: number;
    notes: string[];
    /** The humans scenario: the person's changes by kind and the rule judges' checks. */
    humans?: string;
    /** The failover scenario: failovers made (requested or after a kill), primary changes nobody asked for. */
    failovers?: { made: number; unrequested: number };
    /** The failover scenario: each daemon's forgewarden_redis_failovers_total at the end (null: not read). */
    redis_failovers_total?: Record<string, number | null>;
    /** The failover scenario: each daemon's forgewarden_redis_up at the end (0: its Redis connection never came back). */
    redis_up?: Record<string, number | null>;
  }[];
}

export function writeSummary(
  file: string,
  summary: Omit<Summary, 'passed' | 'failed' | 'rows'>,
  rows: readonly Row[],
): Summary {
  const full: Summary = {
    ...summary,
    passed: rows.filter(passed).length,
    failed: rows.filter((r) => !passed(r)).length,
    rows: rows.map((r) => ({ ...r, passed: passed(r) })),
  };
  writeFileSync(file, `${JSON.stringify(full, null, 2)}\n`);
  return full;
}

export function scenarioSummary(name: string, result: ScenarioResult): Summary['scenarios'][number] {
  return {
    name,
    wall_ms: result.wallMs,
    converged: result.converged,
    clock_steps: result.clockSteps,
    daemon_starts: result.daemonStarts,
    requests: result.requests,
    faults: Object.values(result.outcome.faults).reduce((a, b) => a + b, 0),
    notes: result.notes,
    ...(result.humansLine !== undefined ? { humans: result.humansLine } : {}),
    ...(result.failovers ? { failovers: result.failovers } : {}),
    ...(result.redisMetrics
      ? {
          redis_failovers_total: Object.fromEntries(
            Object.entries(result.redisMetrics).map(([name, m]) => [name, m.failovers]),
          ),
          redis_up: Object.fromEntries(Object.entries(result.redisMetrics).map(([name, m]) => [name, m.up])),
        }
      : {}),
  };
}
