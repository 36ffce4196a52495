import { checkConfigFile, type CheckedConfig } from '../config/load';
import { ConfigError, type ConfigProblem, formatProblem } from '../config/problems';
import type { AppConfig } from '../config/schema';
import { POLICY_TYPES } from '../policies';

/** `-c FILE`, else FORGEWARDEN_CONFIG, else config/policies.yml. */
export function configPath(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return option ?? env.FORGEWARDEN_CONFIG ?? 'config/policies.yml';
}

export const EXIT_INVALID_CONFIG = 2;

/** Loads the policy file: the configuration, or each problem as one `FILE:LINE:COL key.path: message` line. */
export function reportedProblems(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): { config: AppConfig } | { problems: string[] } {
  const checked = checkedOrProblems(file, { env });
  if ('problems' in checked) return checked;
  // Read with the environment, every value is known: a file without problems has its configuration.
  if (!checked.config) throw new Error(`${file}: checked without a configuration`);
  return { config: checked.config };
}

/**
 * Checks the policy file, with the environment or (`assumeEnvironment`, for `validate --no-env`) taking every
 * variable as set: what was checked, or each problem as one `FILE:LINE:COL key.path: message` line.
 */
export function checkedOrProblems(
  file: string,
  options: { env?: NodeJS.ProcessEnv; assumeEnvironment?: boolean },
): CheckedConfig | { problems: string[] } {
  try {
    return checkConfigFile(file, {
      policyTypes: POLICY_TYPES,
      env: options.env ?? process.env,
      assumeEnvironment: options.assumeEnvironment,
    });
  } catch (error) {
    if (error instanceof ConfigError)
      return { problems: error.problems.map((problem) => formatProblem(withWayForward(problem, file))) };
    // A bug in checking, not in the file; still the operator gets one located line (and exit 2), not a stack trace.
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return {
      problems: [
        formatProblem({
          file,
          line: 1,
          col: 1,
          path: '(file)',
          message: `the file could not be checked (a bug in forgewarden; please report it): ${reason}`,
        }),
      ],
    };
  }
}

/** A missing policy file is a newcomer's first step, not a typo: the message names the two ways on. */
function withWayForward(problem: ConfigProblem, file: string): ConfigProblem {
  if (problem.path !== '(file)' || !problem.message.endsWith(': no such file')) return problem;
  return {
    ...problem,
    message: `${problem.message}; start one from the example (cp config/example.yml ${file}), or name another with -c (-c config/demo.yml runs against the sandbox forge)`,
  };
}

/** Loads the policy file; on problems prints each on its own line to stderr and answers undefined. */
export function loadOrReport(file: string, env: NodeJS.ProcessEnv = process.env): AppConfig | undefined {
  const loaded = reportedProblems(file, env);
  if ('config' in loaded) return loaded.config;
  printProblems(file, loaded.problems);
  return undefined;
}

/** Each problem on its own line to stderr, then their count. */
export function printProblems(file: string, problems: readonly string[]): void {
  process.stderr.write(`${problems.slice(0, MAX_LISTED).join('\n')}\n`);
  const count = problems.length;
  const listed = count > MAX_LISTED ? ` (the first ${MAX_LISTED} are listed)` : '';
  process.stderr.write(`${file}: ${count} problem${count === 1 ? '' : 's'}${listed}\n`);
}

/** A megabyte of mistakes could fill a terminal many times over; the first ones are what the operator fixes first. */
const MAX_LISTED = 100;
