import { EngineService, type PassResult } from '../engine/engine.service';
import {
  clearProgress,
  EXIT_PARTIAL,
  isPartial,
  passJson,
  selectPolicies,
  type PassOptions,
  terminalProgress,
  unknownPolicy,
  unobservedLines,
} from './plan';
import { renderTable } from './table';
import { withApp } from './with-app';

/** One acting pass of each policy (delays are waited out in-process), then exit: for cron jobs and CI. */
export async function onceCommand(options: PassOptions & { json?: boolean }): Promise<number> {
  return withApp(
    'once',
    options,
    async (app) => {
      const engine = app.get(EngineService);
      const names = selectPolicies(engine, options.policy, 'once');
      if (!names) return 2;
      const results: PassResult[] = [];
      // In a terminal, what a pass waits for (a policy's delay, a long export) is said as it happens.
      for (const name of names) results.push(await engine.runPass(name, 'act', 'inline', terminalProgress()));
      clearProgress();
      process.stdout.write(
        options.json
          ? `${JSON.stringify(
              results.map((result) => passJson(result)),
              null,
              2,
            )}\n`
          : renderSummary(results),
      );
      const failed = results.some(
        (result) => result.error !== undefined || result.records.some((record) => record.outcome === 'failed'),
      );
      if (failed) return 1;
      return results.some(isPartial) ? EXIT_PARTIAL : 0;
    },
    'check',
    unknownPolicy(options.policy),
  );
}

export function renderSummary(results: readonly PassResult[]): string {
  if (results.length === 0) return 'no policies configured\n';
  return results
    .map((result) => {
      const head = `${result.policy} (${result.type}, ${result.dryRun ? 'dry run' : 'acting'})`;
      if (result.error !== undefined) return `${head}: pass failed: ${result.error}\n`;
      const counts = new Map<string, number>();
      for (const record of result.records) counts.set(record.outcome, (counts.get(record.outcome) ?? 0) + 1);
      const tally =
        [...counts].map(([outcome, count]) => `${count} ${outcome.replace('_', ' ')}`).join(', ') ||
        'nothing to decide';
      const unread = unobservedLines(result);
      const acted = result.records.filter((record) => record.outcome !== 'skipped');
      if (acted.length === 0) return `${head}: ${tally}\n${unread}`;
      const table = renderTable(
        ['OUTCOME', 'ACTION', 'TARGET', 'REASON', 'DETAIL'],
        acted.map((record) => [
          record.outcome,
          record.decision.action,
          record.decision.target,
          record.decision.reason,
          record.detail ?? '',
        ]),
      );
      return `${head}: ${tally}\n${unread}${table}\n`;
    })
    .join('\n');
}
