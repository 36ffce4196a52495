import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { freePort, isAlive, redisAnswers } from '../support/redis-server';

/** Every redis-server the suite started and has not closed, for an interrupted suite to stop. */
const live = new Set<ChaosRedis>();

export async function closeAllRedis(): Promise<void> {
  await Promise.all([...live].map((redis) => redis.close()));
}

/**
 * The suite's own redis-server, on a port that stays the same across restarts so the daemons' REDIS_URL stays valid.
 * It never saves on its own (`--save ''`, no AOF). `down()` kills it as a crash would; `up('empty')` brings it back
 * without data, as a Redis without persistence comes back; `snapshot()` before `down()` and `up('with-data')` bring it
 * back with the data it held, as one with persistence does.
 */
export class ChaosRedis {
  private pid: number | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'forgewarden-chaos-redis-'));

  private constructor(readonly port: number) {}

  static async start(): Promise<ChaosRedis> {
    const redis = new ChaosRedis(await freePort());
    live.add(redis);
    await redis.up('empty');
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it again on the same port, loading the last snapshot or not. */
  async up(data: 'empty' | 'with-data'): Promise<void> {
    if (this.pid !== undefined) return;
    if (data === 'empty') rmSync(join(this.dir, 'dump.rdb'), { force: true });
    const pidFile = join(this.dir, 'redis.pid');
    rmSync(pidFile, { force: true });
    const started = spawnSync(
      'redis-server',
      [
        '--port',
        String(this.port),
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
        this.dir,
        '--dbfilename',
        'dump.rdb',
        '--logfile',
        join(this.dir, 'redis.log'),
      ],
      { stdio: 'ignore' },
    );
    if (started.status !== 0) throw new Error(`redis-server did not start on port ${this.port}`);
    const deadline = Date.now() + 10_000;
    while (!(await redisAnswers(this.url, 200))) {
      if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not answer within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
    this.pid = Number(readFileSync(pidFile, 'utf8').trim());
  }

  /** Writes what it holds to disk now (SAVE), for `up('with-data')`. */
  async snapshot(): Promise<void> {
    const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.save();
    } finally {
      client.disconnect();
    }
  }

  /** What the daemons left in it (describeRedis), for a scenario that did not reach the expected outcome. */
  describe(): Promise<string> {
    return describeRedis(this.url);
  }

  /** The daemons' audit trail (auditOutcomes). */
  auditOutcomes(): Promise<Map<string, Map<string, number>>> {
    return auditOutcomes(this.url);
  }

  /** SIGKILL, through its own pid: connections drop as in a crash, and whatever it did not save is gone. */
  async down(): Promise<void> {
    const pid = this.pid;
    this.pid = undefined;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      return; // Already gone.
    }
    const deadline = Date.now() + 5_000;
    while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  /** Stops it for good and removes its folder. */
  async close(): Promise<void> {
    live.delete(this);
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * What the daemons left in the Redis at `url`, for a scenario that did not reach the expected outcome: every key with
 * its type, size and time to live, and the members of the queue's lists (which jobs are active, waiting, delayed,
 * failed).
 */
export async function describeRedis(url: string): Promise<string> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  const lines: string[] = [];
  try {
    await client.connect();
    const keys = (await client.keys('*')).sort();
    for (const key of keys.slice(0, 500)) {
      const type = await client.type(key);
      const ttl = await client.pttl(key);
      let size = '';
      let members: string[] = [];
      if (type === 'list') {
        size = String(await client.llen(key));
        members = await client.lrange(key, 0, 20);
      } else if (type === 'zset') {
        size = String(await client.zcard(key));
        members = await client.zrange(key, 0, 20, 'WITHSCORES');
      } else if (type === 'string') {
        members = [(await client.get(key))?.slice(0, 200) ?? ''];
      } else if (type === 'hash') size = String(await client.hlen(key));
      lines.push(
        `${key} ${type}${size ? ` (${size})` : ''} ttl=${ttl}${members.length > 0 ? ` ${members.join(' ')}` : ''}`,
      );
    }
    if (keys.length > 500) lines.push(`… ${keys.length - 500} more keys`);
  } catch (error) {
    lines.push(`Redis could not be read: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    client.disconnect();
  }
  return `${lines.join('\n')}\n`;
}

/** The daemons' audit trail (prefix `chaos`) in the Redis at `url`, counted by policy and outcome. */
export async function auditOutcomes(url: string): Promise<Map<string, Map<string, number>>> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  const counts = new Map<string, Map<string, number>>();
  try {
    await client.connect();
    for (const [, fields] of await client.xrange('chaos:audit', '-', '+')) {
      const entry: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) entry[fields[i]] = fields[i + 1];
      const byOutcome = counts.get(entry.policy) ?? new Map<string, number>();
      byOutcome.set(entry.outcome, (byOutcome.get(entry.outcome) ?? 0) + 1);
      counts.set(entry.policy, byOutcome);
    }
  } catch {
    // Redis unreadable: the figures read 0, and the rows still judge the forge.
  } finally {
    client.disconnect();
  }
  return counts;
}
