import type { INestApplicationContext } from '@nestjs/common';
import { createServer } from 'node:net';
import Redis from 'ioredis';
import { createApp } from '../../src/bootstrap';
import { parseConfig } from '../../src/config/load';
import type { PolicyTypeDefinition } from '../../src/config/policy-type';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { QueueService } from '../../src/queue/queue.service';
import { AppLogger } from '../../src/logging/logger';
import { type RunningSandbox, type SandboxOptions, startSandbox, type World } from '../../src/sandbox';
import { MemoryStream } from './memory-stream';
import { ADMIN_TOKEN } from './world-builders';

/** The daemon's clock, as createApp takes it. */
type DaemonClock = NonNullable<Parameters<typeof createApp>[3]>['clock'];

export interface EngineHarnessOptions {
  /** Names the policy file and each test's Redis key prefix. */
  readonly name: string;
  readonly world: () => World;
  /** The policy types the daemon knows. */
  readonly policyTypes: readonly PolicyTypeDefinition[];
  /** How the sandbox starts, besides its world. */
  readonly sandbox?: Omit<SandboxOptions, 'world'>;
}

export interface DaemonOptions {
  /** The `policies:` list of the policy file, as YAML lines. */
  readonly policies: readonly string[];
  /** Default: the administrator's. */
  readonly token?: string;
  /** Fields of the `gitlab:` section besides url and token; default `max_requests_per_minute: 100000`. */
  readonly gitlab?: string;
  /** The file's `dry_run`. */
  readonly dryRun?: boolean;
  /** Default: the system clock. */
  readonly clock?: DaemonClock;
  /** Where the daemon logs, at debug level (default: nowhere a test reads, errors only). */
  readonly logs?: MemoryStream;
}

export interface ServedDaemonOptions extends DaemonOptions {
  /** The `webhooks.secret_token`: webhooks are on. */
  readonly webhookToken: string;
}

export interface ServedDaemon {
  readonly app: INestApplicationContext;
  /** The HTTP server's base URL (a free port on 127.0.0.1). */
  readonly url: string;
}

export interface EngineHarness {
  /** The sandbox of the current test. */
  readonly sandbox: RunningSandbox;
  /** A connection to the test Redis, for looking at what the daemon keeps there. */
  readonly redis: Redis;
  /** The current test's Redis key prefix: nothing another test or run writes starts with it. */
  readonly prefix: string;
  /** The daemon (without HTTP) on the test's sandbox and Redis; it is closed after the test unless closed before. */
  app(options: DaemonOptions): Promise<INestApplicationContext>;
  /**
   * The daemon with its HTTP server and webhooks on, working its queue (webhook events, queued actions) but with no
   * schedules: nothing polls unless the test runs a pass.
   */
  serve(options: ServedDaemonOptions): Promise<ServedDaemon>;
  /** Closes a daemon before the test ends, e.g. to start another on the same Redis as after a restart. */
  close(app: INestApplicationContext): Promise<void>;
  /** One inline pass of `policy`, as `once` runs it; the test fails when the pass did. */
  pass(app: INestApplicationContext, policy: string, mode?: 'act' | 'plan'): Promise<PassResult>;
  /** Deletes every key of this test from Redis, as a Redis restarted without persistence would. */
  clearRedis(): Promise<void>;
}

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || address === null) throw new Error('no free port');
  return address.port;
}

const REDIS_URL = (): string => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const quietLogger = () => new AppLogger({ level: 'error', stream: new MemoryStream() });
let testsStarted = 0;

/**
 * A policy type end to end: per test, a sandbox seeded from `world()` and a Redis prefix of its own; daemons started
 * on both from a policy file, and after the test every daemon closed, the sandbox closed and the prefix's keys gone.
 */
export function useEngineHarness(options: EngineHarnessOptions): EngineHarness {
  let sandbox: RunningSandbox | undefined;
  let redis: Redis | undefined;
  let prefix = '';
  const apps = new Set<INestApplicationContext>();

  const clearRedis = async (): Promise<void> => {
    const keys = (await redis?.keys(`${prefix}:*`)) ?? [];
    if (keys.length > 0) await redis?.del(...keys);
  };

  beforeEach(async () => {
    sandbox = await startSandbox({ ...options.sandbox, world: options.world() });
    redis = new Redis(REDIS_URL());
    prefix = `it-${options.name}-${process.pid}-${++testsStarted}`;
  });

  afterEach(async () => {
    for (const app of apps) await app.close();
    apps.clear();
    await sandbox?.close();
    await clearRedis();
    await redis?.quit();
  });

  const started = <T>(what: string, value: T | undefined): T => {
    if (value === undefined) throw new Error(`the ${what} starts in beforeEach; use it inside a test`);
    return value;
  };

  const policyFile = (daemon: DaemonOptions, extra: readonly string[] = []) => {
    const file = `${options.name}.yml`;
    const config = parseConfig(
      [
        'version: 1',
        `gitlab: { url: "${started('sandbox', sandbox).url}", token: "${daemon.token ?? ADMIN_TOKEN}", ${daemon.gitlab ?? 'max_requests_per_minute: 100000'} }`,
        `redis: { url: "${REDIS_URL()}", prefix: "${prefix}" }`,
        `dry_run: ${daemon.dryRun ?? false}`,
        ...extra,
        'policies:',
        ...daemon.policies,
      ].join('\n'),
      file,
      { policyTypes: options.policyTypes, env: {} },
    );
    return { config, file };
  };

  return {
    get sandbox() {
      return started('sandbox', sandbox);
    },
    get redis() {
      return started('Redis connection', redis);
    },
    get prefix() {
      return prefix;
    },
    async app(daemon) {
      const { config, file } = policyFile(daemon);
      const logger = daemon.logs ? new AppLogger({ level: 'debug', stream: daemon.logs }) : quietLogger();
      const { app } = await createApp(config, file, logger, { http: false, clock: daemon.clock });
      apps.add(app);
      return app;
    },
    async serve(daemon) {
      // Port 0 turns the server off in the policy file, so a free port is found first.
      const { config, file } = policyFile(daemon, [
        `http: { host: 127.0.0.1, port: ${await freePort()} }`,
        `webhooks: { enabled: true, secret_token: "${daemon.webhookToken}" }`,
      ]);
      const { app, httpUrl } = await createApp(config, file, quietLogger(), { clock: daemon.clock });
      apps.add(app);
      app.get(QueueService).startWorking();
      return { app, url: started('HTTP server', httpUrl) };
    },
    async close(app) {
      apps.delete(app);
      await app.close();
    },
    async pass(app, policy, mode = 'act') {
      const result = await app.get(EngineService).runPass(policy, mode, 'inline');
      expect(result.error).toBeUndefined();
      return result;
    },
    clearRedis,
  };
}
