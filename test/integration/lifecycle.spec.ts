import Redis from 'ioredis';
import { createApp } from '../../src/bootstrap';
import { AppLogger } from '../../src/logging/logger';
import { defineJob } from '../../src/queue/jobs';
import { QueueService, WORK_QUEUE } from '../../src/queue/queue.service';
import { startSandbox } from '../../src/sandbox';
import { childEnv, startCli, statusOf, waitUntil, writeTempFile } from '../support/cli';
import { testConfig } from '../support/config';
import { MemoryStream } from '../support/memory-stream';
import { freePort, startRedisServer } from '../support/redis-server';

const slowJob = defineJob<{ id: string; ms: number }>('test.slow');
const orphanJob = defineJob<{ id: string }>('test.orphan');

const quietLogger = () => new AppLogger({ level: 'error', format: 'json', stream: new MemoryStream() });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('graceful shutdown with a real Redis', () => {
  let redis: Redis;
  let prefix: string;

  beforeEach(() => {
    prefix = `it-shutdown-${process.pid}-${Date.now()}`;
    redis = new Redis(process.env.REDIS_URL!);
  });

  afterEach(async () => {
    release();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  /** Ends a job cut off by the shutdown bound, so its handler does not outlive the test. */
  let release: () => void = () => undefined;

  async function startWorker(shutdownTimeout: string, finished: string[]) {
    const { app } = await createApp(testConfig({ prefix, shutdownTimeout }), 'test.yml', quietLogger());
    const queue = app.get(QueueService);
    const released = new Promise<void>((resolve) => (release = resolve));
    queue.handle(slowJob, async ({ id, ms }) => {
      await Promise.race([sleep(ms), released]);
      finished.push(id);
    });
    queue.handle(orphanJob, async () => undefined);
    queue.startWorking();
    return { app, queue };
  }

  it('lets a running job finish before closing, and records it completed', async () => {
    const finished: string[] = [];
    const { app, queue } = await startWorker('30s', finished);
    await queue.enqueue(slowJob, { id: 'a', ms: 1_500 }, { jobId: 'slow-a' });
    await waitUntil('the job runs', () => queue.activeJobs === 1);

    await app.close();

    expect(finished).toEqual(['a']);
    expect(await redis.zscore(`${prefix}:${WORK_QUEUE}:completed`, 'slow-a')).not.toBeNull();
    expect(await redis.llen(`${prefix}:${WORK_QUEUE}:active`)).toBe(0);
  });

  it('stops waiting at shutdown_timeout and leaves the job to run again', async () => {
    const finished: string[] = [];
    const { app, queue } = await startWorker('1s', finished);
    await queue.enqueue(slowJob, { id: 'b', ms: 8_000 }, { jobId: 'slow-b' });
    await waitUntil('the job runs', () => queue.activeJobs === 1);

    await app.close();

    expect(finished).toEqual([]);
    // Still active in Redis, not completed: Bull will see it stalled and deliver it again.
    expect(await redis.lrange(`${prefix}:${WORK_QUEUE}:active`, 0, -1)).toEqual(['slow-b']);
    expect(await redis.zscore(`${prefix}:${WORK_QUEUE}:completed`, 'slow-b')).toBeNull();
    release();
  });

  it('refuses to start working while a defined job has no handler', async () => {
    const { app } = await createApp(testConfig({ prefix }), 'test.yml', quietLogger());
    try {
      const queue = app.get(QueueService);
      queue.handle(slowJob, async () => undefined);
      expect(() => queue.startWorking()).toThrow('no handler for job "test.orphan"');
    } finally {
      await app.close();
    }
  });

  it('fails to start with a clear error when Redis does not answer, saying how long it waited', async () => {
    const port = await freePort();
    const config = testConfig({ prefix, redisUrl: `redis://127.0.0.1:${port}` });
    await expect(createApp(config, 'test.yml', quietLogger())).rejects.toThrow(
      new RegExp(
        `^cannot reach Redis at redis://127\\.0\\.0\\.1:${port} \\(REDIS_URL\\): connection refused \\(ECONNREFUSED\\); gave up after \\d+\\.\\ds \\(redis\\.connect_timeout 2s\\)$`,
      ),
    );
  });
});

describe('a Redis restart while running', () => {
  it('marks the daemon unready, then ready again, without it exiting', async () => {
    const redis = await startRedisServer();
    // Ready also means the forge accepts the token: the sandbox's demo world is the forge here.
    const forge = await startSandbox();
    const httpPort = await freePort();
    const file = writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge.url}", token: "glpat-sandbox-admin-token" }`,
        `http: { port: ${httpPort} }`,
      ].join('\n'),
    );
    const daemon = startCli(['run', '-c', file], childEnv({ REDIS_URL: redis.url }));
    const readyz = () => statusOf(`http://127.0.0.1:${httpPort}/readyz`);
    let restarted = redis;
    try {
      await waitUntil('the daemon is ready', async () => (await readyz()) === 200);

      await redis.stop();
      await waitUntil('the daemon reports Redis missing', async () => (await readyz()) === 503);
      expect(await statusOf(`http://127.0.0.1:${httpPort}/healthz`)).toBe(200);
      const redisUp = async () =>
        /^forgewarden_redis_up (\d)$/m.exec(await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text())?.[1];
      await waitUntil('the metric shows Redis down', async () => (await redisUp()) === '0', 15_000);
      expect(daemon.running).toBe(true);

      restarted = await startRedisServer(redis.port);
      await waitUntil('the daemon is ready again', async () => (await readyz()) === 200, 20_000);
      await waitUntil('the metric shows Redis up', async () => (await redisUp()) === '1', 15_000);
      expect(daemon.running).toBe(true);
    } finally {
      const result = await daemon.stop('SIGTERM');
      await restarted.stop();
      await forge.close();
      // The end of its output comes along, so a failure says why the daemon did not exit cleanly.
      expect(
        result.code === 0 ? 'exit 0' : `exit ${result.code}: ${(result.stdout + result.stderr).slice(-1500)}`,
      ).toBe('exit 0');
    }
  });
});
