import { loadConfigFile } from '../config/load';
import { ConfigError } from '../config/problems';
import type { AppConfig } from '../config/schema';
import { POLICY_TYPES } from '../policies';

/** `-c FILE`, else FORGEWARDEN_CONFIG, else config/policies.yml. */
export function configPath(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return option ?? env.FORGEWARDEN_CONFIG ?? 'config/policies.yml';
}

export const EXIT_INVALID_CONFIG = 2;

/** Loads the policy file; on problems prints each on its own line to stderr and answers undefined. */
export function loadOrReport(file: string): AppConfig | undefined {
  try {
    return loadConfigFile(file, { policyTypes: POLICY_TYPES });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    const count = error.problems.length;
    process.stderr.write(`${file}: ${count} problem${count === 1 ? '' : 's'}\n`);
    return undefined;
  }
}
