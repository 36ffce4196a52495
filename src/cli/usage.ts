import { LOG_FORMATS, LOG_LEVEL_NAMES } from '../logging/levels';

/** A usage error (unknown option, bad argument, bad LOG_LEVEL) exits 2, like an invalid policy file. */
export const EXIT_USAGE = 2;

/** What is wrong with LOG_LEVEL or LOG_FORMAT, naming the allowed values; undefined when both are fine or unset. */
export function logSettingsProblem(env: NodeJS.ProcessEnv): string | undefined {
  const level = env.LOG_LEVEL;
  if (
    level !== undefined &&
    level !== '' &&
    level.toLowerCase() !== 'log' &&
    !LOG_LEVEL_NAMES.includes(level.toLowerCase())
  ) {
    return `LOG_LEVEL must be one of ${LOG_LEVEL_NAMES.join(', ')} (got "${level}")`;
  }
  const format = env.LOG_FORMAT;
  if (format !== undefined && format !== '' && !(LOG_FORMATS as readonly string[]).includes(format)) {
    return `LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')} (got "${format}")`;
  }
  return undefined;
}
