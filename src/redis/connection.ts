import Redis, { type RedisOptions } from 'ioredis';
import { Redactor } from '../logging/redact';

/** Startup could not reach Redis within its deadline; the message names where (and the setting that says so) and why. */
export class RedisUnavailableError extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach Redis at ${url} (REDIS_URL): ${reason}`);
    this.name = 'RedisUnavailableError';
  }
}

/** The URL as it may be shown: without its password. */
export function displayRedisUrl(url: string): string {
  return new Redactor().redactText(url);
}

/** The password inside a Redis URL, so the logger can mask it wherever it appears. */
export function redisUrlPassword(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Options for long-lived connections: reconnect forever with a capped backoff, so a Redis restart costs the daemon
 * a pause, not its life. Blocking and subscriber connections (Bull's) must not give up on queued commands.
 */
export function longLivedOptions(connectionName: string, blocking = false): RedisOptions {
  return {
    connectionName,
    retryStrategy: (attempt) => Math.min(attempt * 200, 5_000),
    maxRetriesPerRequest: blocking ? null : 3,
    enableReadyCheck: !blocking,
    connectTimeout: 5_000,
  };
}

/** Answers no wait mends for a one-shot command: nothing listens there, no such host, or the password is wrong. */
const FINAL_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'WRONGPASS', 'NOAUTH']);

/**
 * Waits until Redis answers PING or `timeoutMs` passes. Startup uses this to fail fast with a clear message rather
 * than hang in ioredis' reconnect loop; the connections the daemon then keeps are made separately.
 *
 * The daemon waits out a Redis that is starting with it (`redis.connect_timeout`); a one-shot command
 * (`giveUpWhenRefused`) ends at the first refusal instead, since a person or a cron job is waiting on it.
 */
export async function waitForRedis(url: string, timeoutMs: number, options: { giveUpWhenRefused?: boolean } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let reason = 'no answer';
  for (;;) {
    const remaining = deadline - Date.now();
    const probe = new Redis(url, {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      connectTimeout: Math.max(100, Math.min(remaining, 2_000)),
    });
    // connect() rejects with a bare "Connection is closed"; the cause (ECONNREFUSED...) comes as an error event.
    let cause: unknown;
    probe.on('error', (error) => {
      cause ??= error;
    });
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch (error) {
      const failure = cause ?? error;
      reason = describeRedisError(failure);
      if (options.giveUpWhenRefused && FINAL_CODES.has(errorCode(failure) ?? '')) throw new RedisUnavailableError(displayRedisUrl(url), reason);
    } finally {
      probe.disconnect();
    }
    if (Date.now() + 250 >= deadline) throw new RedisUnavailableError(displayRedisUrl(url), reason);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const CODE_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
};

/** The error's code (a socket's, or the first word of a Redis error reply such as WRONGPASS). */
function errorCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code) return code;
  const message = error instanceof Error ? error.message : String(error);
  if (/connect ETIMEDOUT|timed? ?out/i.test(message)) return 'ETIMEDOUT';
  return /^(WRONGPASS|NOAUTH)\b/.exec(message)?.[1];
}

/** The cause in words, with its code for a search: `connection refused (ECONNREFUSED)`. */
function describeRedisError(error: unknown): string {
  const code = errorCode(error);
  const words = code ? CODE_WORDS[code] : undefined;
  if (words) return `${words} (${code})`;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.startsWith(code) ? `${message} (${code})` : message;
}
