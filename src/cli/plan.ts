import type { AppConfig } from '../config/schema';
import { EngineService, type PassResult } from '../engine/engine.service';
import { count } from '../engine/words';
import { SKIP } from '../engine/policy';
import { leftPartial } from '../engine/pass-runner';
import { renderTable } from './table';
import { type AppCommandOptions, withApp } from './with-app';

export interface PassOptions extends AppCommandOptions {
  policy?: string;
}

/** `plan --exit-code`: at least one action would be taken. */
export const EXIT_CHANGES_PENDING = 3;

/**
 * Some targets could not be read, or the forge refused an action for good: the rest of the work was done, and the
 * output names those targets. Distinct from 1 (a pass or an action failed), so a cron wrapper can tell the two apart.
 */
export const EXIT_PARTIAL = 4;

/** The pass could not read some of its targets (`plan`, `once`), or the forge refused one of its actions (`once`). */
export function isPartial(result: PassResult): boolean {
  return (result.unobserved?.length ?? 0) > 0 || result.records.some(leftPartial);
}

/**
 * An unknown `--policy`, naming the configured ones: a usage error found in the file alone, so `plan` and `once` say it
 * (exit 2) before contacting Redis or the forge.
 */
export function unknownPolicy(wanted: string | undefined): (config: AppConfig) => string | undefined {
  return (config) => {
    const names = config.policies.map((policy) => policy.name);
    if (wanted === undefined || names.includes(wanted)) return undefined;
    return `no policy named "${wanted}"; configured: ${names.join(', ') || 'none'}`;
  };
}

/** Which policies a one-shot command runs: all, or the one named by --policy (checked against the file already). */
export function selectPolicies(
  engine: EngineService,
  wanted: string | undefined,
  command: string,
): string[] | undefined {
  const names = engine.policyNames();
  if (wanted === undefined) return names;
  if (names.includes(wanted)) return [wanted];
  process.stderr.write(
    `forgewarden ${command}: no policy named "${wanted}"; configured: ${names.join(', ') || 'none'}\n`,
  );
  return undefined;
}

/** One observe + decide pass of each policy; prints every decision with its reason and changes nothing. */
export async function planCommand(options: PassOptions & { json?: boolean; exitCode?: boolean }): Promise<number> {
  return withApp(
    'plan',
    options,
    async (app) => {
      const engine = app.get(EngineService);
      const names = selectPolicies(engine, options.policy, 'plan');
      if (!names) return 2;
      const results: PassResult[] = [];
      for (const name of names) results.push(await engine.runPass(name, 'plan', 'inline', terminalProgress()));
      clearProgress();
      process.stdout.write(
        options.json
          ? `${JSON.stringify(
              results.map((result) => passJson(result)),
              null,
              2,
            )}\n`
          : renderPlan(results),
      );
      if (results.some((result) => result.error !== undefined)) return 1;
      const pending = results.some((result) => result.decisions.some((decision) => decision.action !== SKIP));
      if (options.exitCode && pending) return EXIT_CHANGES_PENDING;
      return results.some(isPartial) ? EXIT_PARTIAL : 0;
    },
    'look',
    unknownPolicy(options.policy),
  );
}

/** Progress of long reads on one rewritten stderr line, only when a person watches a terminal. */
export function terminalProgress(): (message: string) => void {
  if (!process.stderr.isTTY) return () => undefined;
  return (message) => process.stderr.write(`\r\x1b[2K${message}`);
}

/** Clears the last progress line, so the result does not start after it. */
export function clearProgress(): void {
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K');
}

export function passJson(result: PassResult) {
  return {
    policy: result.policy,
    type: result.type,
    dry_run: result.dryRun,
    ...(result.paused ? { paused: result.paused } : {}),
    ...(result.error !== undefined ? { error: result.error } : {}),
    ...(result.coveredGroups ? { covered_groups: result.coveredGroups } : {}),
    ...(result.covered ? { covered: result.covered } : {}),
    ...(result.unobserved && result.unobserved.length > 0 ? { unobserved: result.unobserved } : {}),
    ...(result.harm ? { harm_open: result.harm } : {}),
    decisions: result.decisions.map((decision) => {
      const parked = result.parked?.[decision.key];
      return {
        action: decision.action,
        target: decision.target,
        key: decision.key,
        reason: decision.reason,
        ...(decision.delayMs ? { delay_ms: decision.delayMs } : {}),
        params: decision.params,
        ...(decision.details ? { details: decision.details } : {}),
        ...(parked && decision.action !== SKIP ? { refused: parked } : {}),
        ...(decision.repairs !== undefined ? { repairs: decision.repairs } : {}),
      };
    }),
    // What an acting pass (`once`) did with each decision that was not a skip.
    ...(result.records.length > 0
      ? {
          outcomes: result.records.map((record) => ({
            action: record.decision.action,
            target: record.decision.target,
            key: record.decision.key,
            outcome: record.outcome,
            ...(record.detail !== undefined ? { detail: record.detail } : {}),
            ...(record.refusal ? { refused: record.refusal } : {}),
            ...(record.incomplete ? { incomplete: record.incomplete } : {}),
          })),
        }
      : {}),
  };
}

function renderPlan(results: readonly PassResult[]): string {
  if (results.length === 0) return 'no policies configured\n';
  return results
    .map((result) => {
      const mode = result.dryRun ? 'dry run' : 'acting';
      // A paused policy's actions would not be started: said first, with who paused it and why.
      const paused = result.paused
        ? `, paused since ${result.paused.since} by ${result.paused.by}: ${result.paused.reason}`
        : '';
      const head = `${result.policy} (${result.type}, ${mode}${paused})`;
      if (result.error !== undefined) return `${head}: pass failed: ${result.error}\n`;
      const covers = [
        ...(result.coveredGroups ? [`${coveredLine(result.coveredGroups, 'group')}\n`] : []),
        ...(result.covered ? [`${coveredLine(result.covered, 'project')}\n`] : []),
      ].join('');
      const unread = unobservedLines(result);
      if (result.decisions.length === 0) return `${head}: nothing to decide\n${covers}${unread}`;
      const actions = result.decisions.filter((decision) => decision.action !== 'skip').length;
      const table = renderTable(
        ['ACTION', 'TARGET', 'REASON'],
        result.decisions.map((decision) => [decision.action, decision.target, decision.reason]),
        result.decisions.map((decision) => {
          const parked = decision.action === SKIP ? undefined : result.parked?.[decision.key];
          // A parked decision is not sent before its time: plan says so, with the forge's answer.
          const refused = parked
            ? [`refused since ${parked.since}: ${parked.message}; looked at again after ${parked.retry_at}`]
            : [];
          return [...refused, ...(decision.details ?? [])];
        }),
      );
      return `${head}: ${actions} to act on, ${result.decisions.length - actions} skipped\n${covers}${unread}${table}\n`;
    })
    .join('\n');
}

/** The projects (groups) a pass looked at, so a glob's reach is seen before it acts; a long list is cut after 20. */
function coveredLine(targets: readonly string[], noun: 'project' | 'group'): string {
  const shown = targets.slice(0, 20).join(', ');
  const more = targets.length > 20 ? `, and ${targets.length - 20} more (--json lists all)` : '';
  return `covers ${count(targets.length, noun)}: ${shown || 'none'}${more}`;
}

/** The targets a pass could not read, one line each with the forge's answer: left out, not silently. */
export function unobservedLines(result: PassResult): string {
  const unread = (result.unobserved ?? []).map(({ target, reason }) => `not read: ${target}: ${reason}\n`);
  const lacking = result.records.flatMap((record) =>
    (record.incomplete ?? []).map((what) => `incomplete: ${record.decision.target}: ${what}\n`),
  );
  return [...unread, ...lacking].join('');
}
