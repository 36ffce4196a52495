import { readFileSync } from 'node:fs';
import Redis, { Cluster, type RedisOptions } from 'ioredis';
import type { RedisConfig } from '../config/schema';
import { formatDuration } from '../config/duration';
import { Redactor } from '../logging/redact';
import { ANNOUNCE_AFTER_MS, gaveUpAfter, waitingLine } from '../logging/waiting';

/** A connection to whichever topology the file names: one server or a Sentinel-watched primary, or a Cluster. */
export type RedisClient = Redis | Cluster;

/** How Redis is deployed: one server (`url`), a primary the sentinels name (`sentinels`), or a Cluster (`cluster`). */
export type RedisTopology = 'server' | 'sentinel' | 'cluster';

/** Where Redis is and how to be let in: the topology and its addresses, and the ACL user, password and TLS. */
export interface RedisTarget {
  readonly topology: RedisTopology;
  /** Where, as it may be shown: the URL without its password, or the sentinels' or nodes' addresses. */
  readonly where: string;
  /** The setting that names it, for a message that says what to fix. */
  readonly setting: string;
  /** The server's URL (`server` only). */
  readonly url?: string;
  readonly nodes: ReadonlyArray<{ host: string; port: number }>;
  readonly masterName?: string;
  /** What every data connection adds: ACL user, password, TLS. */
  readonly options: RedisOptions;
  /** What connections to the sentinels add: their password and TLS. */
  readonly sentinelOptions: Pick<RedisOptions, 'sentinelPassword' | 'sentinelTLS'>;
}

/**
 * The `redis` section as a connection target. `redis.tls` turns TLS on (as `rediss://` does) and verifies the server
 * against `ca_file` when given; `username` and `password` are sent as AUTH, in place of those in the URL.
 */
export function redisTarget(settings: RedisConfig): RedisTarget {
  const url = settings.url;
  const topology: RedisTopology = settings.sentinels ? 'sentinel' : settings.cluster ? 'cluster' : 'server';
  const where = describeRedis(settings);
  const setting = topology === 'sentinel' ? 'redis.sentinels' : topology === 'cluster' ? 'redis.cluster' : 'REDIS_URL';
  const useTls = settings.tls !== undefined || url?.startsWith('rediss://') === true;
  const tls = useTls ? tlsOptions(settings.tls, where, setting, 'redis.tls') : undefined;
  const sentinelTls = settings.sentinel_tls
    ? tlsOptions(settings.sentinel_tls, where, setting, 'redis.sentinel_tls')
    : undefined;
  return {
    topology,
    where,
    setting,
    ...(url !== undefined && topology === 'server' ? { url } : {}),
    nodes: (settings.sentinels ?? settings.cluster ?? []).map(parseNode),
    ...(settings.master_name ? { masterName: settings.master_name } : {}),
    options: {
      ...(settings.username ? { username: settings.username } : {}),
      ...(settings.password ? { password: settings.password } : {}),
      ...(tls ? { tls } : {}),
    },
    sentinelOptions: {
      ...(settings.sentinel_password ? { sentinelPassword: settings.sentinel_password } : {}),
      ...(sentinelTls ? { sentinelTLS: sentinelTls } : {}),
    },
  };
}

/**
 * The prefix of every key, Forgewarden's and Bull's. In a Cluster it is a hash tag (`{forgewarden}`): every key then
 * lives in one slot, so the ledger's two-key scripts and Bull's many-key ones run there (CROSSSLOT otherwise).
 */
export function redisKeyPrefix(settings: Pick<RedisConfig, 'prefix' | 'cluster'>): string {
  return settings.cluster ? `{${settings.prefix}}` : settings.prefix;
}

/** Where Redis is, as it may be shown: the URL without its password, or the addresses the file names. */
export function describeRedis(settings: Pick<RedisConfig, 'url' | 'sentinels' | 'master_name' | 'cluster'>): string {
  if (settings.sentinels) return `${settings.master_name ?? '?'} via sentinels ${settings.sentinels.join(',')}`;
  if (settings.cluster) return `cluster ${settings.cluster.join(',')}`;
  return displayRedisUrl(settings.url ?? '');
}

/**
 * Opens a connection of the kind `tuning` describes (reconnecting or not, blocking or not) to the target's topology.
 * A Sentinel connection asks the sentinels for the primary on every (re)connect and drops its connection when they
 * announce a new one; a Cluster finds the node of each key's slot itself.
 */
export function openRedis(target: RedisTarget, tuning: RedisOptions): RedisClient {
  switch (target.topology) {
    case 'server':
      return new Redis(target.url ?? '', { ...target.options, ...tuning });
    case 'sentinel':
      return new Redis({
        ...target.options,
        ...tuning,
        ...target.sentinelOptions,
        sentinels: [...target.nodes],
        name: target.masterName,
        role: 'master',
        // TLS toward the primary the sentinels name, not only toward the sentinels.
        ...(target.options.tls ? { enableTLSForSentinelMode: true } : {}),
        sentinelRetryStrategy:
          tuning.retryStrategy === undefined ? undefined : (attempt) => tuning.retryStrategy?.(attempt) ?? null,
        failoverDetector: true,
      });
    case 'cluster': {
      const { retryStrategy, lazyConnect, enableOfflineQueue, enableReadyCheck, ...nodeTuning } = tuning;
      return new Cluster([...target.nodes], {
        redisOptions: { ...target.options, ...nodeTuning },
        ...(retryStrategy === undefined ? {} : { clusterRetryStrategy: (attempt) => retryStrategy?.(attempt) ?? null }),
        ...(lazyConnect === undefined ? {} : { lazyConnect }),
        ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
        ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }),
      });
    }
  }
}

function parseNode(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(colon + 1)) };
}

function tlsOptions(
  tls: RedisConfig['tls'],
  where: string,
  setting: string,
  key: string,
): NonNullable<RedisOptions['tls']> {
  return {
    ...(tls?.ca_file ? { ca: readCaFile(tls.ca_file, where, setting, key) } : {}),
    ...(tls?.server_name ? { servername: tls.server_name } : {}),
  };
}

function readCaFile(file: string, where: string, setting: string, key: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new RedisUnavailableError(
      where,
      `${key}.ca_file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      setting,
    );
  }
}

/** Startup could not reach Redis within its deadline; the message names where (and the setting that says so) and why. */
export class RedisUnavailableError extends Error {
  constructor(
    readonly where: string,
    readonly reason: string,
    setting = 'REDIS_URL',
  ) {
    super(`cannot reach Redis at ${where} (${setting}): ${reason}`);
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
 *
 * READONLY means the server took a write as a replica: after a failover the old primary was demoted under this
 * connection. That is no failed command but a connection to drop: it reconnects (asking the sentinels anew) and
 * sends the command again to the primary.
 */
export function longLivedOptions(connectionName: string, blocking = false): RedisOptions {
  return {
    connectionName,
    retryStrategy: (attempt) => Math.min(attempt * 200, 5_000),
    maxRetriesPerRequest: blocking ? null : 3,
    enableReadyCheck: !blocking,
    connectTimeout: 5_000,
    reconnectOnError: (error) => (isReadOnlyError(error) ? 2 : false),
  };
}

/** Connections the daemon is closing on purpose: keepConnected leaves them closed. */
const closing = new WeakSet<RedisClient>();

/**
 * Keeps a long-lived connection open until the daemon closes it. ioredis gives a connection up for good (`end`) when
 * its connector fails while connecting: a Sentinel connection whose failover detector heard of a new primary while it
 * was still asking the sentinels for one fails that way ("Connection is closed."), and would never reconnect.
 */
export function keepConnected(client: RedisClient): void {
  client.on('end', () => {
    if (closing.has(client)) return;
    const timer = setTimeout(() => {
      if (!closing.has(client) && client.status === 'end') client.connect().catch(() => undefined);
    }, 1_000);
    timer.unref();
  });
}

/** Says that `client` is being closed on purpose, so that keepConnected lets it end. */
export function closingOnPurpose(client: RedisClient): void {
  closing.add(client);
}

export function isReadOnlyError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('READONLY');
}

/**
 * Answers no wait mends for a one-shot command: nothing listens there, no such host, the password is wrong, the
 * server's certificate is not one to trust, or the sentinels know no primary of that name.
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
  'UNKNOWN_MASTER',
  'NO_SENTINEL',
]);

/** A connection that tries once: for a probe or a one-shot check, never a reconnect loop. */
export function oneTryOptions(connectTimeoutMs: number): RedisOptions {
  return { retryStrategy: () => null, maxRetriesPerRequest: 1, connectTimeout: connectTimeoutMs };
}

/**
 * Waits until Redis answers PING or `timeoutMs` passes. Startup uses this to fail fast with a clear message rather
 * than hang in ioredis' reconnect loop; the connections the daemon then keeps are made separately.
 *
 * The daemon waits out a Redis that is starting with it (`redis.connect_timeout`); a one-shot command
 * (`giveUpWhenRefused`) ends at the first refusal instead, since a person or a cron job is waiting on it. A wait that
 * goes on is said at once through `onWait`, and the final error says how long it lasted (`bound` names the setting).
 * `stop` ends the wait between two tries (the daemon asked to stop while it waits).
 */
export async function waitForRedis(
  target: RedisTarget,
  timeoutMs: number,
  options: { giveUpWhenRefused?: boolean; onWait?: (line: string) => void; bound?: string; stop?: AbortSignal } = {},
): Promise<void> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const bound = options.bound ?? `redis.connect_timeout ${formatDuration(timeoutMs)}`;
  let reason = 'no answer';
  let announced = false;
  for (;;) {
    const remaining = deadline - Date.now();
    const probe = openRedis(target, {
      ...oneTryOptions(Math.max(100, Math.min(remaining, 2_000))),
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    // connect() rejects with a bare "Connection is closed"; the cause (ECONNREFUSED...) comes as an error event, and
    // a sentinel that knows no such primary only as a sentinelError.
    let cause: unknown;
    probe.on('error', (error: Error) => {
      cause ??= error;
    });
    probe.on('sentinelError', (error: Error) => {
      // Redis 7 answers "ERR No such master with that name"; older sentinels a null address ("invalid reply").
      if (/invalid reply|no such master/i.test(error.message)) cause = new UnknownMasterError(target.masterName ?? '');
    });
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch (error) {
      const failure = cause ?? error;
      reason = describeRedisError(failure);
      if (options.giveUpWhenRefused && FINAL_CODES.has(errorCode(failure) ?? ''))
        throw new RedisUnavailableError(target.where, reason, target.setting);
    } finally {
      probe.disconnect();
    }
    if (Date.now() + 250 >= deadline)
      throw new RedisUnavailableError(
        target.where,
        `${reason}; ${gaveUpAfter(Date.now() - started, bound)}`,
        target.setting,
      );
    if (!announced && deadline - Date.now() > ANNOUNCE_AFTER_MS) {
      announced = true;
      options.onWait?.(waitingLine(`Redis at ${target.where} (${target.setting})`, reason, deadline, bound));
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
    options.stop?.throwIfAborted();
  }
}

/** The sentinels answer, but monitor no primary by the name the file gives. */
class UnknownMasterError extends Error {
  readonly code = 'UNKNOWN_MASTER';

  constructor(name: string) {
    super(`the sentinels know no primary named "${name}" (redis.master_name)`);
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
  // A Cluster that reached no node says so, and keeps what the last node answered.
  const lastNodeError = (error as { lastNodeError?: unknown } | undefined)?.lastNodeError;
  if (lastNodeError) return errorCode(lastNodeError);
  const message = error instanceof Error ? error.message : String(error);
  if (/connect ETIMEDOUT|timed? ?out/i.test(message)) return 'ETIMEDOUT';
  // "All sentinels are unreachable ... Last error: connect ECONNREFUSED 10.0.0.5:26379"
  const socketCode = /\b(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)\b/.exec(message)?.[1];
  if (socketCode) return socketCode;
  // ioredis keeps no cause when no sentinel could be asked (their sockets' errors are swallowed).
  if (/^All sentinels are unreachable/.test(message)) return 'NO_SENTINEL';
  return /^(WRONGPASS|NOAUTH)\b/.exec(message)?.[1];
}

/** The cause in words, with its code for a search: `connection refused (ECONNREFUSED)`. */
function describeRedisError(error: unknown): string {
  if (error instanceof UnknownMasterError) return error.message;
  const code = errorCode(error);
  if (code === 'NO_SENTINEL') return 'none of the sentinels answered';
  const words = code ? CODE_WORDS[code] : undefined;
  if (words) return `${words} (${code})`;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.startsWith(code) ? `${message} (${code})` : message;
}
