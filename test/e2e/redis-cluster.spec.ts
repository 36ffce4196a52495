import Redis, { Cluster } from 'ioredis';
import {
  childEnv,
  DEMO_RETRY_POLICIES,
  runCli,
  startCli,
  startSandboxCommand,
  statusOf,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { freePort } from '../support/redis-server';
import { startCluster, stopAllTopologies, type RedisClusterTopology } from '../support/redis-topology';

const PREFIX = 'e2e-cluster';

/** Every key of the cluster that matches `pattern`, from each primary in turn (a SCAN is one node's). */
async function keysOf(cluster: Cluster, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  for (const node of cluster.nodes('master')) keys.push(...(await node.keys(pattern)));
  return keys;
}

describe('the daemon on a Redis Cluster of three primaries', () => {
  let topology: RedisClusterTopology;
  let cluster: Cluster;
  let sandbox: CliProcess;
  let forge: string;

  beforeAll(async () => {
    topology = await startCluster();
    cluster = new Cluster(topology.nodes);
    ({ process: sandbox, url: forge } = await startSandboxCommand());
  }, 90_000);

  afterAll(async () => {
    cluster?.disconnect();
    await sandbox?.stop();
    await stopAllTopologies();
  }, 60_000);

  function policyFile(options: { httpPort?: number; dryRun: boolean; prefix?: string }): string {
    return writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge}", token: glpat-sandbox-admin-token, max_requests_per_minute: 1000 }`,
        'redis:',
        `  cluster: [${topology.nodeAddresses.map((address) => `"${address}"`).join(', ')}]`,
        `  prefix: ${options.prefix ?? PREFIX}`,
        `http: { port: ${options.httpPort ?? 0} }`,
        `dry_run: ${options.dryRun}`,
        'policies:',
        ...DEMO_RETRY_POLICIES,
        '',
      ].join('\n'),
    );
  }

  async function retries(): Promise<string[]> {
    const log = (await (await fetch(`${forge}/__sandbox/requests?method=POST`)).json()) as Array<{ path: string }>;
    return log.map((entry) => entry.path).filter((path) => path.endsWith('/retry'));
  }

  it('doctor, plan and once work on it, every key under the {prefix} hash tag, the request budget included', async () => {
    const doctor = await runCli(['doctor', '-c', policyFile({ dryRun: true })], childEnv());
    expect(doctor.stdout).toContain(
      `✓ Redis at cluster ${topology.nodeAddresses.join(',')}: answers and accepts writes\n`,
    );
    expect(doctor.stdout).toContain('✓ Redis maxmemory-policy: noeviction\n');

    const plan = await runCli(['plan', '-c', policyFile({ dryRun: true }), '--json'], childEnv());
    expect(plan.code).toBe(0);
    const policies = JSON.parse(plan.stdout) as Array<{ decisions: Array<{ action: string }> }>;
    const planned = policies.flatMap((policy) => policy.decisions).filter((decision) => decision.action === 'retry');
    expect(planned.length).toBeGreaterThanOrEqual(2);

    const once = await runCli(['once', '-c', policyFile({ dryRun: false })], childEnv(), 60_000);
    expect(once.code).toBe(0);
    expect(once.stdout.split('\n').filter((line) => /^done +retry /.test(line))).toHaveLength(planned.length);
    expect(await retries()).toHaveLength(planned.length);

    const keys = await keysOf(cluster, '*');
    const ours = keys.filter((key) => key.startsWith(`{${PREFIX}}:`));
    expect(ours.filter((key) => key.startsWith(`{${PREFIX}}:ledger:`))).toHaveLength(planned.length);
    expect(ours.some((key) => key.startsWith(`{${PREFIX}}:ratelimit:`))).toBe(true);
    // Nothing of the daemon's outside the hash tag, so every key is in one slot.
    expect(keys.filter((key) => key.includes(PREFIX) && !key.startsWith(`{${PREFIX}}:`))).toEqual([]);
    expect(new Set(await Promise.all(ours.map((key) => cluster.cluster('KEYSLOT', key)))).size).toBe(1);
  }, 120_000);

  it('the daemon runs on it: Bull queues its passes, and they find on the forge what once did', async () => {
    const retriedBefore = (await retries()).length;
    const httpPort = await freePort();
    // A prefix of its own: under once's, the policies passed a moment ago and would wait for their interval.
    const prefix = `${PREFIX}-daemon`;
    const daemon = startCli(['run', '-c', policyFile({ httpPort, dryRun: false, prefix })], childEnv());
    try {
      await waitUntil(
        'the daemon is ready',
        async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
        60_000,
      );
      await waitUntil(
        'both policies passed through the queue',
        async () => {
          const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
          return (
            /forgewarden_passes_total\{policy="retry-network",result="ok"\} [1-9]/.test(text) &&
            /forgewarden_passes_total\{policy="retry-full-disk",result="ok"\} [1-9]/.test(text)
          );
        },
        60_000,
      );
      expect((await keysOf(cluster, `{${prefix}}:work:*`)).length).toBeGreaterThan(0);
      // Retried by `once` already, as the forge shows (newer attempts): nothing is sent twice.
      expect((await retries()).length).toBe(retriedBefore);
    } finally {
      const stopped = await daemon.stop('SIGTERM');
      expect(stopped.code).toBe(0);
    }
  }, 120_000);
});

describe('the daemon on a Redis Cluster whose primary of its slot fails over to its replica', () => {
  const prefix = 'e2e-cluster-failover';
  let topology: RedisClusterTopology;
  let cluster: Cluster;
  let sandbox: CliProcess;
  let forge: string;

  beforeAll(async () => {
    topology = await startCluster({ replicasPerPrimary: 1 });
    cluster = new Cluster(topology.nodes);
    ({ process: sandbox, url: forge } = await startSandboxCommand());
  }, 90_000);

  afterAll(async () => {
    cluster?.disconnect();
    await sandbox?.stop();
    await stopAllTopologies();
  }, 60_000);

  async function retries(): Promise<string[]> {
    const log = (await (await fetch(`${forge}/__sandbox/requests?method=POST`)).json()) as Array<{ path: string }>;
    return log.map((entry) => entry.path).filter((path) => path.endsWith('/retry'));
  }

  /** The replica of the primary that serves the daemon's slot, once the cluster lists it and it is in sync. */
  async function replicaOfOurSlot(): Promise<Redis> {
    const slot = Number(await cluster.cluster('KEYSLOT', `{${prefix}}:marker`));
    let replica: { host: string; port: number } | undefined;
    await waitUntil(
      `the cluster lists a replica for slot ${slot}`,
      async () => {
        const range = (await cluster.cluster('SLOTS')).find(([first, last]) => first <= slot && slot <= last);
        const node = range?.[3];
        replica = node ? { host: node[0], port: node[1] } : undefined;
        return replica !== undefined;
      },
      30_000,
    );
    const connection = new Redis(replica!.port, replica!.host);
    await waitUntil(
      'the replica is in sync',
      async () => /master_link_status:up/.test(await connection.info('replication')),
      30_000,
    );
    return connection;
  }

  it('reconnects to the promoted replica and retries a job failed after it, once', async () => {
    const httpPort = await freePort();
    const file = writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge}", token: glpat-sandbox-admin-token, max_requests_per_minute: 100000 }`,
        'redis:',
        `  cluster: [${topology.nodeAddresses.map((address) => `"${address}"`).join(', ')}]`,
        `  prefix: ${prefix}`,
        `http: { port: ${httpPort} }`,
        'dry_run: false',
        'policies:',
        '  - name: retry',
        '    type: job_retry',
        '    projects: [acme/api, acme/web]',
        '    interval: 2s',
        '    lookback: 2d',
        '    match: { stages: [test, build], failure_log: ["(?i)connection reset", "ETIMEDOUT"] }',
        '',
      ].join('\n'),
    );
    const daemon = startCli(['run', '-c', file], childEnv());
    try {
      await waitUntil(
        'the daemon is ready',
        async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
        60_000,
      );
      await waitUntil('the first pass retried the demo failures', async () => (await retries()).length > 0, 60_000);

      const promoted = await replicaOfOurSlot();
      try {
        expect(await promoted.cluster('FAILOVER')).toBe('OK');
        await waitUntil(
          'the replica is the primary',
          async () => /^role:master/m.test(await promoted.info('replication')),
          60_000,
        );
      } finally {
        promoted.disconnect();
      }

      const failed = await fetch(`${forge}/__sandbox/jobs/1001`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          status: 'failed',
          log: 'Error: connection reset by peer\n',
          failure_reason: 'script_failure',
        }),
      });
      expect(failed.status).toBe(200);
      await waitUntil(
        'the job failed after the failover is retried',
        async () => (await retries()).includes('/api/v4/projects/1/jobs/1001/retry'),
        90_000,
      );
      await waitUntil(
        'the daemon counted the failover',
        async () => {
          const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
          return Number(/^forgewarden_redis_failovers_total (\S+)$/m.exec(text)?.[1]) >= 1;
        },
        30_000,
      );
      const done = await retries();
      expect(done.filter((path, index) => done.indexOf(path) !== index)).toEqual([]);
      expect(await statusOf(`http://127.0.0.1:${httpPort}/readyz`)).toBe(200);
    } finally {
      const stopped = await daemon.stop('SIGTERM');
      expect(stopped.code).toBe(0);
    }
  }, 240_000);
});
