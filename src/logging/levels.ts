/**
 * The names LOG_LEVEL and LOG_FORMAT take, apart from the logger itself: every command checks them before it runs,
 * and a command that needs no logger (validate, schema) should not load winston to do so.
 */
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Nest's level names, most severe first; `info` is accepted for `log`. */
export const LEVELS = { fatal: 0, error: 1, warn: 2, info: 3, debug: 4, verbose: 5 } as const;
export type Level = keyof typeof LEVELS;
/** The values LOG_LEVEL takes (`log` is also read as `info`, Nest's name for it). */
export const LOG_LEVEL_NAMES: readonly string[] = Object.keys(LEVELS);
