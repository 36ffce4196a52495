import { readFileSync } from 'node:fs';
import Redis, { type RedisOptions } from 'ioredis';
import type { AppConfig } from '../config/schema';
import { Redactor } from '../logging/redact';

/** Where Redis is and how to be let in: the URL, and the ACL user, password and TLS the file adds to it. */
export interface RedisTarget {
  readonly url: string;
  readonly options: RedisOptions;
}

/**
 * The `redis` section as a connection target. `redis.tls` turns TLS on (as `rediss://` does) and verifies the server
 * against `ca_file` when given; `username` and `password` are sent as AUTH, in place of those in the URL.
 */
export function redisTarget(settings: AppConfig['redis']): RedisTarget {
  const useTls = settings.tls !== undefined || settings.url.startsWith('rediss://');
  const tls = useTls
    ? {
        ...(settings.tls?.ca_file ? { ca: readCaFile(settings.tls.ca_file, settings.url) } : {}),
        ...(settings.tls?.server_name ? { servername: settings.tls.server_name } : {}),
      }
    : undefined;
  return {
    url: settings.url,
    options: {
      ...(settings.username ? { username: settings.username } : {}),
      ...(settings.password ? { password: settings.password } : {}),
      ...(tls ? { tls } : {}),
    },
  };
}

function readCaFile(file: string, url: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new RedisUnavailableError(displayRedisUrl(url), `redis.tls.ca_file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

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

/**
 * Answers no wait mends for a one-shot command: nothing listens there, no such host, the password is wrong, or the
 * server's certificate is not one to trust.
 */
const FINAL_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'WRONGPASS',
  'NOAUTH',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Waits until Redis answers PING or `timeoutMs` passes. Startup uses this to fail fast with a clear message rather
 * than hang in ioredis' reconnect loop; the connections the daemon then keeps are made separately.
 *
 * The daemon waits out a Redis that is starting with it (`redis.connect_timeout`); a one-shot command
 * (`giveUpWhenRefused`) ends at the first refusal instead, since a person or a cron job is waiting on it.
 */
export async function waitForRedis(target: RedisTarget, timeoutMs: number, options: { giveUpWhenRefused?: boolean } = {}): Promise<void> {
  const { url } = target;
  const deadline = Date.now() + timeoutMs;
  let reason = 'no answer';
  for (;;) {
    const remaining = deadline - Date.now();
    const probe = new Redis(url, {
      ...target.options,
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
