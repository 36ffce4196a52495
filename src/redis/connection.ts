import Redis, { type RedisOptions } from 'ioredis';
import { Redactor } from '../logging/redact';

/** Startup could not reach Redis within its deadline; the message names where and why. */
export class RedisUnavailableError extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach Redis at ${url}: ${reason}`);
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
 * Waits until Redis answers PING or `timeoutMs` passes. Startup uses this to fail fast with a clear message rather
 * than hang in ioredis' reconnect loop; the connections the daemon then keeps are made separately.
 */
export async function waitForRedis(url: string, timeoutMs: number): Promise<void> {
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
      reason = describeRedisError(cause ?? error);
    } finally {
      probe.disconnect();
    }
    if (Date.now() + 250 >= deadline) throw new RedisUnavailableError(displayRedisUrl(url), reason);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function describeRedisError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code) return code;
  const message = error instanceof Error ? error.message : String(error);
  if (/connect ETIMEDOUT|timed? ?out/i.test(message)) return 'ETIMEDOUT';
  return message;
}
