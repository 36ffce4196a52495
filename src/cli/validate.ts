import { formatWarning } from '../config/problems';
import { configWarnings } from '../config/load';
import { checkedOrProblems, configPath, EXIT_INVALID_CONFIG, printProblems } from './config-file';

/**
 * Checks policy files: those named as arguments, else the one `-c`, FORGEWARDEN_CONFIG or the default names. Every
 * file is checked, so one run lists the problems of all. Problems go to stderr and exit 2; warnings (allowed, but
 * probably not meant) go to stderr too, located the same way, and leave the exit code 0. With `env: false`
 * (`--no-env`) the environment is not read: every `${VAR}` is taken as set and only the checks of its value are skipped,
 * so a policy repository's CI checks its files without the forge's URL and token.
 */
export function validateCommand(files: readonly string[], options: { config?: string; env?: boolean }): number {
  const targets =
    files.length > 0 ? [...files, ...(options.config ? [options.config] : [])] : [configPath(options.config)];
  let exitCode = 0;
  for (const file of targets) {
    const checked = checkedOrProblems(file, { assumeEnvironment: options.env === false });
    if ('problems' in checked) {
      printProblems(file, checked.problems);
      exitCode = EXIT_INVALID_CONFIG;
      continue;
    }
    // A value from the environment may leave the configuration unknown: what is known was checked, warnings need it all.
    const warnings = checked.config ? configWarnings(checked.config, file) : [];
    for (const warning of warnings) process.stderr.write(`${formatWarning(warning)}\n`);
    const count = checked.policies;
    const warned = warnings.length === 0 ? '' : `, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
    process.stdout.write(`${file}: valid, ${count} polic${count === 1 ? 'y' : 'ies'}${warned}\n`);
  }
  return exitCode;
}
