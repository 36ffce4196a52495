import { createConnection, createServer, type Server, type Socket } from 'node:net';
import {
  childEnv,
  DEMO_RETRY_POLICIES,
  startCli,
  startSandboxCommand,
  statusOf,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { WORK_QUEUE } from '../../src/queue/queue.service';
import { freePort, startRedisServer, type ThrowawayRedis } from '../support/redis-server';

/**
 * The worker's watchdog, for real: the daemon talks to Redis through a proxy that freezes Bull's blocking connection
 * the way a paused or partitioned primary does (the socket stays open, nothing comes back, not even a FIN), so the
 * worker's BRPOPLPUSH waits forever. Scheduled passes must go on anyway, on a blocking connection made anew.
 * No assertion on time or log lines: the proxy's counts and the daemon's metrics say what happened.
 */

const PREFIX = 'e2e-watchdog';
/**
 * ioredis names each connection first thing (CLIENT SETNAME). BullConnections names the blocking one
 * `forgewarden-bull-bclient`, but Bull renames it before it first connects (setWorkerName: `<prefix>:<queue name in
 * base64>`, which Queue#getWorkers looks for), and ioredis names every later connection of that client so too.
 * Either name marks a blocking connection.
 */
const BCLIENT_NAMES = ['forgewarden-bull-bclient', `${PREFIX}:${Buffer.from(WORK_QUEUE).toString('base64')}`];
/** Enough of what a connection sends first to hold its CLIENT SETNAME (and AUTH before it, were there one). */
const HEAD_BYTES = 1_024;

const POLICY = 'retry-network';

interface ProxiedConnection {
  readonly client: Socket;
  readonly upstream: Socket;
  head: string;
  bclient: boolean;
  frozen: boolean;
  closed: boolean;
}

/**
 * A TCP proxy in front of one Redis. It forwards bytes both ways, tells Bull's blocking connections by what they send
 * first and counts them, and on request freezes the one open at that moment: from then on nothing is forwarded to
 * or from the daemon on it, and its socket toward the daemon is neither ended nor closed from this side (half-open
 * allowed, so a FIN from the daemon is not answered with one). Blocking connections made later are forwarded as usual.
 *
 * The frozen connection's other half, toward Redis, is closed: the daemon's data no longer has that connection, as
 * when the primary it was on failed over. Kept open, Redis would go on serving the BRPOPLPUSH in flight: it pops
 * the next job into `active` and the answer goes nowhere, so no job waits and the job comes back only through
 * Bull's stalled-job check, a minute later; that tests the stalled check, not the watchdog.
 */
class FreezingProxy {
  private readonly connections = new Set<ProxiedConnection>();
  private server: Server | undefined;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = createServer({ allowHalfOpen: true }, (client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(0, '127.0.0.1', () => resolve());
    });
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  /** Blocking connections seen so far, open or not. */
  get bclientConnections(): number {
    return [...this.connections].filter((connection) => connection.bclient).length;
  }

  /** Freezes the blocking connection open now; false when there is none. */
  freezeBclient(): boolean {
    const open = [...this.connections].filter(
      (connection) => connection.bclient && !connection.closed && !connection.frozen,
    );
    for (const connection of open) {
      connection.frozen = true;
      connection.upstream.destroy();
    }
    return open.length > 0;
  }

  async stop(): Promise<void> {
    for (const connection of this.connections) {
      connection.client.destroy();
      connection.upstream.destroy();
    }
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private accept(client: Socket): void {
    const upstream = createConnection({ ...this.target, allowHalfOpen: true });
    const connection: ProxiedConnection = { client, upstream, head: '', bclient: false, frozen: false, closed: false };
    this.connections.add(connection);
    client.on('data', (chunk: Buffer) => {
      if (connection.head.length < HEAD_BYTES) {
        connection.head += chunk.toString('latin1');
        if (BCLIENT_NAMES.some((name) => connection.head.includes(`\r\n${name}\r\n`))) connection.bclient = true;
      }
      if (!connection.frozen) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!connection.frozen) client.write(chunk);
    });
    // An end or a close is passed on unless frozen: a frozen peer answers nothing, not even the end of a connection.
    client.on('end', () => {
      if (!connection.frozen) upstream.end();
    });
    upstream.on('end', () => {
      if (!connection.frozen) client.end();
    });
    const closed = (other: Socket) => () => {
      connection.closed = true;
      if (!connection.frozen) other.destroy();
    };
    client.on('close', closed(upstream));
    upstream.on('close', closed(client));
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  }
}

describe('the worker watchdog', () => {
  let redis: ThrowawayRedis;
  let proxy: FreezingProxy;
  let sandbox: CliProcess;
  let forge: string;
  let daemon: CliProcess | undefined;
  let httpPort: number;

  beforeAll(async () => {
    redis = await startRedisServer();
    proxy = new FreezingProxy({ host: '127.0.0.1', port: redis.port });
    await proxy.start();
    ({ process: sandbox, url: forge } = await startSandboxCommand());
    httpPort = await freePort();
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop('SIGTERM');
    await sandbox?.stop();
    await proxy?.stop();
    await redis?.stop();
  }, 60_000);

  /** The policy's passes counted ok, 0 before the first. */
  async function passes(): Promise<number> {
    try {
      const text = await (
        await fetch(`http://127.0.0.1:${httpPort}/metrics`, { signal: AbortSignal.timeout(2_000) })
      ).text();
      const pattern = new RegExp(`^forgewarden_passes_total\\{policy="${POLICY}",result="ok"\\} (\\S+)$`, 'm');
      return Number(pattern.exec(text)?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  /** The daemon's last lines about its queue and Redis, to say why when the test fails. */
  function daemonLog(): string {
    const lines = `${daemon?.stdout ?? ''}${daemon?.stderr ?? ''}`.split('\n');
    return lines
      .filter((line) => /queue|redis|worker|connection/i.test(line))
      .slice(-30)
      .join('\n');
  }

  it('makes the blocking connection anew when it hangs, and scheduled passes go on', async () => {
    // The first demo retry policy, with a short interval so that passes come often.
    const policy = DEMO_RETRY_POLICIES.slice(0, 6).map((line) => line.replace(/^(\s+interval:) .*$/, '$1 2s'));
    expect(policy[0]).toBe(`  - name: ${POLICY}`);
    expect(policy).toContain('    interval: 2s');
    const file = writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge}", token: glpat-sandbox-admin-token, max_requests_per_minute: 100000 }`,
        `redis: { url: "redis://127.0.0.1:${proxy.port}", prefix: ${PREFIX} }`,
        `http: { port: ${httpPort} }`,
        'dry_run: true',
        'policies:',
        ...policy,
        '',
      ].join('\n'),
    );
    daemon = startCli(['run', '-c', file], childEnv());
    await waitUntil(
      'the daemon is ready',
      async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
      60_000,
    );
    await waitUntil('a pass is counted', async () => (await passes()) >= 1, 60_000);
    expect(proxy.bclientConnections).toBeGreaterThanOrEqual(1);

    const passesAtFreeze = await passes();
    const bclientsAtFreeze = proxy.bclientConnections;
    expect(proxy.freezeBclient()).toBe(true);

    await waitUntil(
      'three more passes are counted after the freeze',
      async () => (await passes()) >= passesAtFreeze + 3,
      90_000,
    ).catch(async (error: unknown) => {
      throw new Error(
        `${String(error)}: passes ${await passes()} (${passesAtFreeze} at the freeze), blocking connections ${proxy.bclientConnections} (${bclientsAtFreeze} at the freeze)\n${daemonLog()}`,
      );
    });
    // The worker came back on a blocking connection made after the freeze: the watchdog's renewal.
    expect(proxy.bclientConnections).toBeGreaterThan(bclientsAtFreeze);
    expect(daemon.running).toBe(true);
  }, 180_000);
});
