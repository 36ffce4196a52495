import { loadConfigFile } from '../config/load';
import { ConfigError, formatProblem } from '../config/problems';
import type { AppConfig } from '../config/schema';
import { POLICY_TYPES } from '../policies';

/** `-c FILE`, else FORGEWARDEN_CONFIG, else config/policies.yml. */
export function configPath(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return option ?? env.FORGEWARDEN_CONFIG ?? 'config/policies.yml';
}

export const EXIT_INVALID_CONFIG = 2;

/** Loads the policy file: the configuration, or each problem as one `FILE:LINE:COL key.path: message` line. */
export function reportedProblems(file: string, env: NodeJS.ProcessEnv = process.env): { config: AppConfig } | { problems: string[] } {
  try {
    return { config: loadConfigFile(file, { policyTypes: POLICY_TYPES, env }) };
  } catch (error) {
    if (error instanceof ConfigError) return { problems: error.problems.map(formatProblem) };
    // A bug in checking, not in the file; still the operator gets one located line (and exit 2), not a stack trace.
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return {
      problems: [formatProblem({ file, line: 1, col: 1, path: '(file)', message: `the file could not be checked (a bug in forgewarden; please report it): ${reason}` })],
    };
  }
}

/** Loads the policy file; on problems prints each on its own line to stderr and answers undefined. */
export function loadOrReport(file: string, env: NodeJS.ProcessEnv = process.env): AppConfig | undefined {
  const loaded = reportedProblems(file, env);
  if ('config' in loaded) return loaded.config;
  const { problems } = loaded;
  process.stderr.write(`${problems.slice(0, MAX_LISTED).join('\n')}\n`);
  const count = problems.length;
  const listed = count > MAX_LISTED ? ` (the first ${MAX_LISTED} are listed)` : '';
  process.stderr.write(`${file}: ${count} problem${count === 1 ? '' : 's'}${listed}\n`);
  return undefined;
}

/** A megabyte of mistakes could fill a terminal many times over; the first ones are what the operator fixes first. */
const MAX_LISTED = 100;
