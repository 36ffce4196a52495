import { formatWarning } from '../config/problems';
import { configWarnings } from '../config/load';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';

/**
 * Checks the policy file. Problems go to stderr and exit 2; warnings (allowed, but probably not meant) go to stderr
 * too, located the same way, and leave the exit code 0.
 */
export function validateCommand(options: { config?: string }): number {
  const file = configPath(options.config);
  const config = loadOrReport(file);
  if (!config) return EXIT_INVALID_CONFIG;
  const warnings = configWarnings(config, file);
  for (const warning of warnings) process.stderr.write(`${formatWarning(warning)}\n`);
  const count = config.policies.length;
  const warned = warnings.length === 0 ? '' : `, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
  process.stdout.write(`${file}: valid, ${count} polic${count === 1 ? 'y' : 'ies'}${warned}\n`);
  return 0;
}
