import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import Redis, { type RedisOptions } from 'ioredis';

/** A redis-server process owned by a test, on a port of its own. */
export interface ThrowawayRedis {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Deletes every key a test wrote under its prefix, on the tests' Redis (REDIS_URL) unless told another. */
export async function dropKeys(prefix: string, url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'): Promise<void> {
  const redis = new Redis(url);
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    await redis.quit();
  }
}

export function redisServerInstalled(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether Redis at `url` answers PING within `timeoutMs`; `options` add what it takes to be let in (ACL user, TLS). */
export async function redisAnswers(url: string, timeoutMs = 1000, options: RedisOptions = {}): Promise<boolean> {
  const client = new Redis(url, {
    ...options,
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * Starts redis-server on `port` (a free one by default), a replica of the one on `replicaOf` if given, and waits until
 * it answers. It runs daemonized, so no child
 * handle keeps the test process alive; stop() ends it through its pid file.
 */
export async function startRedisServer(port?: number, options: { replicaOf?: number } = {}): Promise<ThrowawayRedis> {
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-redis-'));
  const pidFile = join(dir, 'redis.pid');
  const started = spawnSync(
    'redis-server',
    [
      '--port',
      String(chosen),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--pidfile',
      pidFile,
      '--dir',
      dir,
      '--logfile',
      join(dir, 'redis.log'),
      ...(options.replicaOf === undefined ? [] : ['--replicaof', '127.0.0.1', String(options.replicaOf)]),
    ],
    { stdio: 'ignore' },
  );
  if (started.status !== 0) throw new Error(`redis-server did not start on port ${chosen}`);
  const url = `redis://127.0.0.1:${chosen}`;
  const deadline = Date.now() + 10_000;
  while (!(await redisAnswers(url, 200))) {
    if (Date.now() > deadline) throw new Error(`redis-server on port ${chosen} did not answer within 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  return {
    url,
    port: chosen,
    stop: async () => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether a process with this id still runs (signal 0 only checks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
