import { formatWarning } from '../config/problems';
import { configWarnings } from '../config/load';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';

/**
 * Checks policy files: those named as arguments, else the one `-c`, FORGEWARDEN_CONFIG or the default names. Every
 * file is checked, so one run lists the problems of all. Problems go to stderr and exit 2; warnings (allowed, but
 * probably not meant) go to stderr too, located the same way, and leave the exit code 0.
 */
export function validateCommand(files: readonly string[], options: { config?: string }): number {
  const targets = files.length > 0 ? [...files, ...(options.config ? [options.config] : [])] : [configPath(options.config)];
  let exitCode = 0;
  for (const file of targets) {
    const config = loadOrReport(file);
    if (!config) {
      exitCode = EXIT_INVALID_CONFIG;
      continue;
    }
    const warnings = configWarnings(config, file);
    for (const warning of warnings) process.stderr.write(`${formatWarning(warning)}\n`);
    const count = config.policies.length;
    const warned = warnings.length === 0 ? '' : `, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
    process.stdout.write(`${file}: valid, ${count} polic${count === 1 ? 'y' : 'ies'}${warned}\n`);
  }
  return exitCode;
}
