import type { LoggerService, LogLevel } from '@nestjs/common';
import * as winston from 'winston';
import { type Level, LEVELS, type LogFormat } from './levels';
import { redactor, type Redactor } from './redact';

export { LOG_FORMATS, LOG_LEVEL_NAMES, type LogFormat } from './levels';

/** Nest's own start-up chatter ("dependencies initialized", routes mapped) is debug detail, not news. */
const FRAMEWORK_CONTEXTS = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
]);
const COLORS = { fatal: 'magenta', error: 'red', warn: 'yellow', info: 'green', debug: 'blue', verbose: 'gray' };

export interface LoggerOptions {
  readonly level?: string;
  readonly format?: LogFormat;
  /** Where lines go: stdout for the daemon, stderr for commands whose stdout is their result. */
  readonly stream?: NodeJS.WritableStream;
  readonly redactor?: Redactor;
}

/** LOG_LEVEL and LOG_FORMAT as the operator set them; JSON lines unless the output is a terminal. */
export function loggerOptionsFromEnv(env: NodeJS.ProcessEnv, stream: NodeJS.WriteStream): LoggerOptions {
  const format: LogFormat =
    env.LOG_FORMAT === 'json' ? 'json' : env.LOG_FORMAT === 'pretty' ? 'pretty' : stream.isTTY ? 'pretty' : 'json';
  return { level: env.LOG_LEVEL, format, stream };
}

export function parseLogLevel(level: string | undefined): Level {
  const normalized = (level || 'info').toLowerCase();
  if (normalized === 'log') return 'info';
  if (normalized in LEVELS) return normalized as Level;
  throw new Error(`LOG_LEVEL must be one of fatal, error, warn, info, debug, verbose (got "${level}")`);
}

/**
 * Winston behind Nest's LoggerService. Every entry passes the redactor twice: its fields before formatting (error
 * stacks included) and the formatted line after, so a secret cannot slip through a field the first pass missed.
 */
export class AppLogger implements LoggerService {
  private readonly winston: winston.Logger;
  /** Set by flush(): winston's stream is ended, and a write to it would throw "write after end". */
  private ended: Promise<void> | undefined;

  constructor(options: LoggerOptions = {}) {
    const redaction = options.redactor ?? redactor;
    const redactFields = winston.format((info) => {
      // By key too: a top-level `password` is as secret as a nested one.
      for (const key of Object.keys(info)) info[key] = redaction.redactField(key, info[key]);
      return info;
    });
    const redactLine = winston.format((info) => {
      const MESSAGE = Symbol.for('message');
      const line = (info as Record<symbol, unknown>)[MESSAGE];
      if (typeof line === 'string') (info as Record<symbol, unknown>)[MESSAGE] = redaction.redactText(line);
      return info;
    });
    const render = options.format === 'pretty' ? prettyFormat() : winston.format.json();
    this.winston = winston.createLogger({
      levels: LEVELS,
      level: parseLogLevel(options.level),
      format: winston.format.combine(redactFields(), winston.format.timestamp(), render, redactLine()),
      transports: [new winston.transports.Stream({ stream: options.stream ?? process.stdout })],
    });
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  /** Nest passes `(message, stack?, context?)`. */
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('verbose', message, params);
  }

  setLogLevels(levels: LogLevel[]): void {
    const mostVerbose = levels.map((level) => parseLogLevel(level)).sort((a, b) => LEVELS[b] - LEVELS[a])[0];
    if (mostVerbose) this.winston.level = mostVerbose;
  }

  /**
   * Ends the logger: resolves once every entry written so far has reached the stream (before exiting the process).
   * What is logged afterwards is dropped: shutdown closes the logger last, and a straggler (a library's late
   * callback) must not turn a clean exit into a crash.
   */
  async flush(): Promise<void> {
    this.ended ??= new Promise<void>((resolve) => {
      this.winston.once('finish', resolve);
      this.winston.end();
    });
    await this.ended;
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (this.ended) return;
    const entry: Record<string, unknown> = { level };
    // Nest's Logger appends the context (the class name) as the last string parameter.
    const rest = [...params];
    if (rest.length > 0 && typeof rest[rest.length - 1] === 'string') {
      const last = rest[rest.length - 1] as string;
      if (level !== 'error' || rest.length > 1 || !looksLikeStack(last)) entry.context = rest.pop();
    }
    if (level === 'info' && FRAMEWORK_CONTEXTS.has(entry.context as string)) entry.level = 'debug';
    if (message instanceof Error) {
      entry.message = message.message;
      entry.error = message;
    } else if (typeof message === 'object' && message !== null) {
      Object.assign(entry, message);
      entry.message ??= '';
    } else {
      entry.message = String(message);
    }
    for (const param of rest) {
      if (typeof param === 'string' && looksLikeStack(param)) entry.stack = param;
      else if (param instanceof Error) entry.error = param;
      else if (typeof param === 'object' && param !== null) Object.assign(entry, param);
      else if (param !== undefined) entry.detail = param;
    }
    // A stack trace is for whoever debugs forgewarden, not for the operator reading why a pass failed: the message
    // says that. It is kept at debug and verbose.
    if (LEVELS[this.winston.level as Level] < LEVELS.debug) {
      delete entry.stack;
      if (entry.error instanceof Error) entry.error = `${entry.error.name}: ${entry.error.message}`;
    }
    this.winston.log(entry as winston.LogEntry);
  }
}

function looksLikeStack(text: string): boolean {
  return /\n\s+at /.test(text) || /^\w*Error\b/.test(text);
}

function prettyFormat(): winston.Logform.Format {
  const colorizer = winston.format.colorize({ colors: COLORS });
  return winston.format.printf((info) => {
    const { level, message, timestamp, context, stack, error, ...fields } = info as Record<string, unknown>;
    const levelText = colorizer.colorize(String(level), String(level).toUpperCase().padEnd(7));
    const where = typeof context === 'string' ? ` [${context}]` : '';
    const extra = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
    const errorStack = (error as { stack?: string } | undefined)?.stack ?? (stack as string | undefined);
    return `${String(timestamp)} ${levelText}${where} ${String(message)}${extra}${errorStack ? `\n${errorStack}` : ''}`;
  });
}
