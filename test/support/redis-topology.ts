import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { isAlive } from './redis-server';

/**
 * Real Redis topologies (Sentinel, Cluster) started from the redis-server binary, for tests of a daemon that must
 * survive a failover. Like startRedisServer, every process runs daemonized with a pid file, so no child handle keeps
 * the test process alive, and is ended by SIGKILL: a crash is what these tests are about.
 */

const HOST = '127.0.0.1';
/** Long enough for a loaded two-core machine; a wait that runs out says what did not happen. */
const SETTLE_MS = 30_000;
/** A kill needs down-after, a vote, and perhaps a second election after a split vote (twice the failover timeout). */
const PROMOTION_MS = 60_000;

export interface HostPort {
  host: string;
  port: number;
}

export interface SentinelTopology {
  readonly masterName: string;
  readonly sentinels: HostPort[];
  readonly sentinelAddresses: string[];
  /** The primary's and the replica's ports, in the order they were started (the primary first). */
  readonly dataPorts: number[];
  /** The primary the sentinels name now. */
  primaryPort(): Promise<number>;
  /**
   * A requested failover, done once the new primary serves and the old one (unless killed) replicates from it, so
   * another failover can follow. Takes about 10 s: Sentinel waits that long before it demotes the old primary.
   */
  failover(): Promise<{ from: number; to: number }>;
  /** SIGKILLs the primary and returns at once: what happens next is the test's to watch. */
  killPrimary(): Promise<{ killed: number }>;
  /** The new primary, once every sentinel names it and it says it is one. */
  waitForPrimaryOtherThan(port: number): Promise<number>;
  /** Brings a killed data server back as a replica of the current primary, and waits until the sentinels see it. */
  restart(port: number): Promise<void>;
  /** Every process the topology started, killed ones included, for a test to check that none outlives stop(). */
  pids(): number[];
  /** The log file of each data server and sentinel (gone after stop(): copy them first to keep them). */
  logFiles(): string[];
  stop(): Promise<void>;
}

export interface RedisClusterTopology {
  readonly nodes: HostPort[];
  readonly nodeAddresses: string[];
  pids(): number[];
  stop(): Promise<void>;
}

export interface SentinelTopologyOptions {
  masterName?: string;
  downAfterMs?: number;
  /** Also how long a sentinel waits before it tries again after a failed election (twice this). */
  failoverTimeoutMs?: number;
}

export interface ClusterOptions {
  primaries?: number;
  replicasPerPrimary?: number;
}

/** Topologies not stopped yet, so an afterAll can end them even when a test (or a start) failed half-way. */
const unstopped = new Set<{ stop(): Promise<void> }>();

/** Ports handed to a topology of this process and not yet given back, so two topologies never pick the same one. */
const claimedPorts = new Set<number>();

export async function stopAllTopologies(): Promise<void> {
  await Promise.all([...unstopped].map((topology) => topology.stop()));
}

export async function startSentinelTopology(options: SentinelTopologyOptions = {}): Promise<SentinelTopology> {
  const topology = new RunningSentinelTopology(
    options.masterName ?? 'forgewarden',
    options.downAfterMs ?? 1000,
    options.failoverTimeoutMs ?? 5000,
  );
  try {
    await topology.start();
  } catch (error) {
    // The error that stopped the start is the one worth reporting, not one from cleaning up after it.
    await topology.stop().catch(() => undefined);
    throw error;
  }
  return topology;
}

export async function startCluster(options: ClusterOptions = {}): Promise<RedisClusterTopology> {
  const primaries = options.primaries ?? 3;
  const replicasPerPrimary = options.replicasPerPrimary ?? 0;
  // redis-cli --cluster create refuses fewer.
  if (primaries < 3) throw new Error(`a Redis Cluster needs at least 3 primaries, not ${primaries}`);
  const cluster = new RunningCluster(primaries, replicasPerPrimary);
  try {
    await cluster.start();
  } catch (error) {
    // The error that stopped the start is the one worth reporting, not one from cleaning up after it.
    await cluster.stop().catch(() => undefined);
    throw error;
  }
  return cluster;
}

/** The processes of one topology, in one temporary directory that goes with them. */
class OwnedProcesses {
  readonly dir: string;
  /** pid → port, for every process ever started here. */
  private readonly started = new Map<number, number>();
  private readonly ports = new Set<number>();
  /** port → what runs there ("data-12345", "sentinel-12347"), which names its pid and log files. */
  private readonly names = new Map<number, string>();

  constructor(prefix: string) {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
  }

  pidFile(port: number): string {
    return join(this.dir, `${this.names.get(port) ?? port}.pid`);
  }

  logFile(port: number): string {
    return join(this.dir, `${this.names.get(port) ?? port}.log`);
  }

  async claimPort(withClusterBus = false): Promise<number> {
    const port = await claimPort(withClusterBus);
    this.ports.add(port);
    return port;
  }

  /**
   * Starts redis-server on `port` with `args` before the common options, and waits until it answers PING. A restart
   * keeps the name of the first start, so its log follows on from the old one.
   */
  async launch(port: number, role: string, args: string[]): Promise<number> {
    if (!this.names.has(port)) this.names.set(port, `${role}-${port}`);
    const pidFile = this.pidFile(port);
    rmSync(pidFile, { force: true });
    const launched = spawnSync(
      'redis-server',
      [
        ...args,
        '--port',
        String(port),
        '--bind',
        HOST,
        '--daemonize',
        'yes',
        '--pidfile',
        pidFile,
        '--logfile',
        this.logFile(port),
      ],
      { encoding: 'utf8' },
    );
    if (launched.status !== 0) {
      throw new Error(
        `redis-server ${args.join(' ')} on port ${port} did not start: ${launched.stderr}${launched.stdout}` +
          logTails([this.logFile(port)]),
      );
    }
    await waitFor(
      `redis-server on port ${port} answers`,
      async () => {
        // A taken port ends the server at once; no use waiting out the deadline.
        if (readIfExists(this.logFile(port)).includes('Address already in use')) {
          throw new GiveUp(`port ${port} is taken`);
        }
        if (!existsSync(pidFile)) return 'no pid file yet';
        return (await ask(port, (client) => client.ping())) === 'PONG' || 'no PONG';
      },
      SETTLE_MS,
      [this.logFile(port)],
    );
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    this.started.set(pid, port);
    return pid;
  }

  /** SIGKILLs the server on `port`; its pid file goes too, so a restart waits for the new one. */
  kill(port: number): void {
    const pidFile = this.pidFile(port);
    const pid = Number(readIfExists(pidFile).trim());
    if (!pid || ownProcessState(pid, port) !== 'running')
      throw new Error(`no server of this topology runs on port ${port}`);
    process.kill(pid, 'SIGKILL');
    rmSync(pidFile, { force: true });
  }

  pids(): number[] {
    return [...this.started.keys()];
  }

  /** Kills what still runs, waits until every process is gone (zombies reaped too), removes the directory. */
  async stop(): Promise<void> {
    for (const [pid, port] of this.started) {
      if (ownProcessState(pid, port) === 'running') process.kill(pid, 'SIGKILL');
    }
    const deadline = Date.now() + SETTLE_MS;
    let lingering = this.lingering();
    while (lingering.length > 0 && Date.now() < deadline) {
      await sleep(50);
      lingering = this.lingering();
    }
    rmSync(this.dir, { recursive: true, force: true });
    for (const port of this.ports) claimedPorts.delete(port);
    if (lingering.length > 0)
      throw new Error(`Redis processes ${lingering.join(', ')} still exist ${SETTLE_MS / 1000} s after SIGKILL`);
  }

  private lingering(): number[] {
    return [...this.started].filter(([pid, port]) => ownProcessState(pid, port) !== 'gone').map(([pid]) => pid);
  }
}

class RunningSentinelTopology implements SentinelTopology {
  readonly sentinels: HostPort[] = [];
  readonly sentinelAddresses: string[] = [];
  readonly dataPorts: number[] = [];
  private readonly processes = new OwnedProcesses('forgewarden-sentinel-');
  /** Data servers killed and not restarted: the sentinels list them as down replicas, which a settled state allows. */
  private readonly killed = new Set<number>();
  private stopping?: Promise<void>;

  constructor(
    readonly masterName: string,
    private readonly downAfterMs: number,
    private readonly failoverTimeoutMs: number,
  ) {
    unstopped.add(this);
  }

  async start(): Promise<void> {
    const primary = await this.processes.claimPort();
    const replica = await this.processes.claimPort();
    this.dataPorts.push(primary, replica);
    await this.processes.launch(primary, 'data', this.dataServerArgs(primary));
    await this.processes.launch(replica, 'data', [
      ...this.dataServerArgs(replica),
      '--replicaof',
      HOST,
      String(primary),
    ]);
    // Before the sentinels start: a sentinel learns of replicas from the primary's INFO, which it asks every 10 s.
    await waitFor(
      `replica ${replica} syncs with primary ${primary}`,
      () => this.replicatesFrom(replica, primary),
      SETTLE_MS,
      this.dataLogs(),
    );
    for (let i = 0; i < 3; i++) {
      const port = await this.processes.claimPort();
      const config = join(this.processes.dir, `sentinel-${port}.conf`);
      // Sentinel rewrites its config file with what it learns (replicas, other sentinels, epochs).
      writeFileSync(
        config,
        [
          `sentinel monitor ${this.masterName} ${HOST} ${primary} 2`,
          `sentinel down-after-milliseconds ${this.masterName} ${this.downAfterMs}`,
          `sentinel failover-timeout ${this.masterName} ${this.failoverTimeoutMs}`,
          `sentinel parallel-syncs ${this.masterName} 1`,
          '',
        ].join('\n'),
      );
      await this.processes.launch(port, 'sentinel', [config, '--sentinel', '--dir', this.processes.dir]);
      this.sentinels.push({ host: HOST, port });
      this.sentinelAddresses.push(`${HOST}:${port}`);
    }
    // Until each sentinel knows the replica and the other sentinels, a failover fails with NOGOODSLAVE or INPROG.
    await this.settle(primary);
  }

  async primaryPort(): Promise<number> {
    let lastError: unknown;
    for (const sentinel of this.sentinels) {
      try {
        return await this.primaryNamedBy(sentinel.port);
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error(`no sentinel names a primary for ${this.masterName}: ${String(lastError)}`);
  }

  async failover(): Promise<{ from: number; to: number }> {
    const from = await this.agreedPrimary();
    if (this.dataPorts.every((port) => port === from || this.killed.has(port))) {
      throw new Error(`no replica of ${from} is running to be promoted: restart a killed one first`);
    }
    const asked = this.sentinels[0].port;
    // A sentinel that has just settled may still refuse for a moment (a replica's INFO not refreshed yet).
    await waitFor(
      `sentinel ${asked} accepts SENTINEL FAILOVER ${this.masterName}`,
      async () => {
        try {
          return (
            (await ask(asked, (client) => client.call('SENTINEL', 'FAILOVER', this.masterName))) === 'OK' || 'no OK'
          );
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          if (/NOGOODSLAVE|INPROG/.test(message)) return message;
          throw error;
        }
      },
      SETTLE_MS,
      this.sentinelLogs(),
    );
    const to = await this.waitForPrimaryOtherThan(from);
    await this.settle(to);
    return { from, to };
  }

  async killPrimary(): Promise<{ killed: number }> {
    const port = await this.primaryPort();
    this.processes.kill(port);
    this.killed.add(port);
    return { killed: port };
  }

  async waitForPrimaryOtherThan(port: number): Promise<number> {
    let promoted = 0;
    await waitFor(
      `the sentinels promote a primary other than ${port}`,
      async () => {
        const named = await this.agreedPrimary();
        if (named === port) return `the sentinels still name ${port}`;
        const role = (await this.replication(named)).role;
        if (role !== 'master') return `${named} is named the primary but says role:${role}`;
        promoted = named;
        return true;
      },
      PROMOTION_MS,
      [...this.sentinelLogs(), ...this.dataLogs()],
    );
    return promoted;
  }

  async restart(port: number): Promise<void> {
    if (!this.killed.has(port)) throw new Error(`port ${port} is not a killed data server of this topology`);
    const primary = await this.agreedPrimary();
    if (primary === port) throw new Error(`the sentinels still name ${port} the primary: wait for the promotion first`);
    await this.processes.launch(port, 'data', [...this.dataServerArgs(port), '--replicaof', HOST, String(primary)]);
    this.killed.delete(port);
    await this.settle(primary);
  }

  pids(): number[] {
    return this.processes.pids();
  }

  logFiles(): string[] {
    return [...this.dataLogs(), ...this.sentinelLogs()];
  }

  stop(): Promise<void> {
    this.stopping ??= this.processes.stop().finally(() => unstopped.delete(this));
    return this.stopping;
  }

  /**
   * The state a failover can start from: the primary says so, every live replica replicates from it, and every
   * sentinel names it, lists each live replica as up and knows the other sentinels.
   */
  private async settle(primary: number): Promise<void> {
    const replicas = this.dataPorts.filter((port) => port !== primary && !this.killed.has(port));
    await waitFor(
      `the topology settles on primary ${primary} with replicas ${replicas.join(', ') || '(none)'}`,
      async () => {
        const role = (await this.replication(primary)).role;
        if (role !== 'master') return `${primary} says role:${role}`;
        for (const replica of replicas) {
          const replicating = await this.replicatesFrom(replica, primary);
          if (replicating !== true) return replicating;
        }
        for (const { port } of this.sentinels) {
          const named = await this.primaryNamedBy(port);
          if (named !== primary) return `sentinel ${port} names ${named}`;
          const master = flatRecord(await ask(port, (client) => client.call('SENTINEL', 'MASTER', this.masterName)));
          if (master.flags !== 'master') return `sentinel ${port} flags the primary ${master.flags}`;
          const listed = records(await ask(port, (client) => client.call('SENTINEL', 'REPLICAS', this.masterName)));
          for (const replica of replicas) {
            const entry = listed.find((record) => Number(record.port) === replica);
            if (!entry) return `sentinel ${port} does not list replica ${replica}`;
            if (/s_down|o_down|disconnected/.test(entry.flags))
              return `sentinel ${port} flags replica ${replica} ${entry.flags}`;
          }
          const peers = records(
            await ask(port, (client) => client.call('SENTINEL', 'SENTINELS', this.masterName)),
          ).filter((record) => !/s_down|disconnected/.test(record.flags));
          if (peers.length !== this.sentinels.length - 1)
            return `sentinel ${port} knows ${peers.length} other sentinels`;
        }
        return true;
      },
      SETTLE_MS,
      [...this.sentinelLogs(), ...this.dataLogs()],
    );
  }

  /** The primary every sentinel names; fails (for waitFor to retry) while they disagree. */
  private async agreedPrimary(): Promise<number> {
    const named = await Promise.all(this.sentinels.map(({ port }) => this.primaryNamedBy(port)));
    if (new Set(named).size !== 1) throw new Error(`the sentinels name different primaries: ${named.join(', ')}`);
    return named[0];
  }

  private async primaryNamedBy(sentinelPort: number): Promise<number> {
    const address = await ask(sentinelPort, (client) =>
      client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.masterName),
    );
    if (!Array.isArray(address) || address.length !== 2)
      throw new Error(`sentinel ${sentinelPort} does not know ${this.masterName}`);
    return Number(address[1]);
  }

  private async replicatesFrom(replica: number, primary: number): Promise<true | string> {
    const info = await this.replication(replica);
    if (info.role !== 'slave' || Number(info.master_port) !== primary)
      return `${replica} is not a replica of ${primary}`;
    return info.master_link_status === 'up' || `${replica} has master_link_status:${info.master_link_status}`;
  }

  private async replication(port: number): Promise<Record<string, string>> {
    return parseInfo(await ask(port, (client) => client.info('replication')));
  }

  /**
   * A directory apiece, emptied at each start: a replica keeps the RDB of its last full sync there, and a server
   * started anywhere else would load (and leave) a dump.rdb in the test's working directory.
   */
  private dataServerArgs(port: number): string[] {
    const dir = join(this.processes.dir, `data-${port}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    return [...DATA_SERVER_ARGS, '--dir', dir];
  }

  private dataLogs(): string[] {
    return this.dataPorts.map((port) => this.processes.logFile(port));
  }

  private sentinelLogs(): string[] {
    return this.sentinels.map(({ port }) => this.processes.logFile(port));
  }
}

class RunningCluster implements RedisClusterTopology {
  readonly nodes: HostPort[] = [];
  readonly nodeAddresses: string[] = [];
  private readonly processes = new OwnedProcesses('forgewarden-cluster-');
  private stopping?: Promise<void>;

  constructor(
    private readonly primaries: number,
    private readonly replicasPerPrimary: number,
  ) {
    unstopped.add(this);
  }

  async start(): Promise<void> {
    const total = this.primaries * (1 + this.replicasPerPrimary);
    for (let i = 0; i < total; i++) {
      const port = await this.processes.claimPort(true);
      // Each node rewrites its own nodes.conf; a directory apiece keeps them (and any dump) apart.
      const dir = join(this.processes.dir, `node-${port}`);
      mkdirSync(dir);
      await this.processes.launch(port, 'node', [
        ...DATA_SERVER_ARGS,
        '--dir',
        dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '2000',
      ]);
      this.nodes.push({ host: HOST, port });
      this.nodeAddresses.push(`${HOST}:${port}`);
    }
    await this.create();
    const logs = this.nodes.map(({ port }) => this.processes.logFile(port));
    await waitFor(
      `every node of the cluster reports all 16384 slots served`,
      async () => {
        let replicasLinked = 0;
        for (const { port } of this.nodes) {
          const info = parseInfo(String(await ask(port, (client) => client.call('CLUSTER', 'INFO'))));
          if (info.cluster_state !== 'ok') return `${port} says cluster_state:${info.cluster_state}`;
          if (info.cluster_slots_assigned !== '16384')
            return `${port} sees ${info.cluster_slots_assigned} slots assigned`;
          if (Number(info.cluster_known_nodes) !== total)
            return `${port} knows ${info.cluster_known_nodes} of ${total} nodes`;
          const replication = parseInfo(await ask(port, (client) => client.info('replication')));
          if (replication.role === 'slave' && replication.master_link_status === 'up') replicasLinked++;
        }
        const replicas = this.primaries * this.replicasPerPrimary;
        return replicasLinked === replicas || `${replicasLinked} of ${replicas} replicas synced`;
      },
      SETTLE_MS,
      logs,
    );
  }

  pids(): number[] {
    return this.processes.pids();
  }

  stop(): Promise<void> {
    this.stopping ??= this.processes.stop().finally(() => unstopped.delete(this));
    return this.stopping;
  }

  private async create(): Promise<void> {
    const args = [
      '--cluster',
      'create',
      ...this.nodeAddresses,
      '--cluster-replicas',
      String(this.replicasPerPrimary),
      '--cluster-yes',
    ];
    await new Promise<void>((resolve, reject) => {
      execFile('redis-cli', args, { timeout: SETTLE_MS }, (error, stdout, stderr) => {
        if (error)
          reject(new Error(`redis-cli ${args.join(' ')} failed: ${error.message}\n${tail(`${stdout}${stderr}`)}`));
        else resolve();
      });
    });
  }
}

/**
 * No persistence: a restarted or promoted server must hold only what replication gave it. No diskless-sync delay:
 * it waits (5 s by default) for more replicas to share one transfer, and a demoted primary always needs a full one.
 */
const DATA_SERVER_ARGS = ['--save', '', '--appendonly', 'no', '--repl-diskless-sync-delay', '0'];

/**
 * A port below the usual ephemeral range (32768 and up), so no outgoing connection takes it while a killed server
 * waits to be restarted on it. A cluster node also listens on port + 10000 for its bus; that must be free too.
 */
async function claimPort(withClusterBus: boolean): Promise<number> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = 11_000 + Math.floor(Math.random() * 11_000);
    const needed = withClusterBus ? [port, port + 10_000] : [port];
    if (needed.some((p) => claimedPorts.has(p))) continue;
    if (!(await canListen(port)) || (withClusterBus && !(await canListen(port + 10_000)))) continue;
    for (const p of needed) claimedPorts.add(p);
    return port;
  }
  throw new Error(`found no free port${withClusterBus ? ' with a free cluster bus port (+10000)' : ''}`);
}

async function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/** Asks one server one thing on a connection of its own; a server that is down fails at once instead of being retried. */
async function ask<T>(port: number, question: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    connectTimeout: 1000,
    commandTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await question(client);
  } finally {
    client.disconnect();
  }
}

/**
 * Waits until `ready` says true; anything else it returns (or throws) is why not yet, and the last of it goes into
 * the error when `timeoutMs` runs out, with the tails of `logs`.
 */
async function waitFor(
  what: string,
  ready: () => Promise<true | string>,
  timeoutMs: number,
  logs: string[],
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let reason = 'not checked yet';
  for (;;) {
    try {
      const answer = await ready();
      if (answer === true) return;
      reason = answer;
    } catch (error) {
      if (error instanceof GiveUp) throw new Error(`${what}: ${error.message}${logTails(logs)}`);
      reason = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs / 1000} s (last: ${reason})${logTails(logs)}`);
    await sleep(100);
  }
}

/** Thrown by a waitFor condition that knows waiting longer cannot help. */
class GiveUp extends Error {}

function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields[line.slice(0, colon)] = line.slice(colon + 1).trim();
  }
  return fields;
}

/** SENTINEL MASTER answers one flat [field, value, ...] list. */
function flatRecord(reply: unknown): Record<string, string> {
  const fields: Record<string, string> = {};
  if (!Array.isArray(reply)) return fields;
  for (let i = 0; i + 1 < reply.length; i += 2) fields[String(reply[i])] = String(reply[i + 1]);
  return fields;
}

/** SENTINEL REPLICAS and SENTINELS answer a list of flat lists. */
function records(reply: unknown): Array<Record<string, string>> {
  return Array.isArray(reply) ? reply.map(flatRecord) : [];
}

/**
 * 'running' only when the pid still belongs to the server on `port` (redis-server titles itself host:port), so a pid
 * reused by another process is never signalled; a zombie is not gone yet for isAlive, so it is waited for.
 */
function ownProcessState(pid: number, port: number): 'running' | 'zombie' | 'gone' {
  if (!isAlive(pid)) return 'gone';
  let stat: string;
  let commandLine: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    // No /proc to tell by: a live pid is taken to be ours.
    return 'running';
  }
  if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return 'zombie';
  return commandLine.startsWith('redis-server') && new RegExp(`:${port}(\\D|$)`).test(commandLine) ? 'running' : 'gone';
}

function logTails(files: string[]): string {
  return files
    .filter((file) => existsSync(file))
    .map((file) => `\n--- last lines of ${file} ---\n${tail(readIfExists(file))}`)
    .join('');
}

function tail(text: string, lines = 15): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function readIfExists(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
