import Redis from 'ioredis';
import {
  childEnv,
  DEMO_RETRY_POLICIES,
  runCli,
  startSandboxCommand,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { startRedisServer, type ThrowawayRedis } from '../support/redis-server';

/** A replica of the server on `primaryPort`, once it is in sync. */
async function startReplica(primaryPort: number): Promise<ThrowawayRedis> {
  const replica = await startRedisServer(undefined, { replicaOf: primaryPort });
  const connection = new Redis(replica.url);
  try {
    await waitUntil(
      'the replica is in sync',
      async () => /master_link_status:up/.test(await connection.info('replication')),
      30_000,
    );
  } finally {
    connection.disconnect();
  }
  return replica;
}

async function retriesReceived(forge: string): Promise<string[]> {
  const log = (await (await fetch(`${forge}/__sandbox/requests?method=POST`)).json()) as Array<{ path: string }>;
  return log.map((entry) => entry.path).filter((path) => path.endsWith('/retry'));
}

describe('a claim is acted on only once a replica holds it (redis.min_replicas_acked)', () => {
  let primary: ThrowawayRedis;
  let sandbox: CliProcess;
  let forge: string;

  beforeAll(async () => {
    primary = await startRedisServer();
    ({ process: sandbox, url: forge } = await startSandboxCommand());
  }, 60_000);

  afterAll(async () => {
    await sandbox.stop();
    await primary.stop();
  });

  function policyFile(redisLines: string[]): string {
    return writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge}", token: glpat-sandbox-admin-token }`,
        'redis:',
        `  url: ${primary.url}`,
        '  prefix: e2e-replicas',
        ...redisLines,
        'http: { port: 0 }',
        'dry_run: false',
        'policies:',
        ...DEMO_RETRY_POLICIES,
        '',
      ].join('\n'),
    );
  }

  it('defers every retry while no replica confirms its claim, then retries each once when one does', async () => {
    // No replica, but the file asks for one: every claim waits a second for it, and nothing is sent.
    const deferred = await runCli(['once', '-c', policyFile(['  min_replicas_acked: 1'])], childEnv(), 60_000);
    expect(deferred.code).toBe(0);
    const deferredLines = deferred.stdout.split('\n').filter((line) => /^deferred +retry /.test(line));
    expect(deferredLines.length).toBeGreaterThanOrEqual(2);
    for (const line of deferredLines)
      expect(line).toContain('not sent: its claim is not on the replicas yet (0 of 1 replica(s)');
    expect(deferred.stdout).not.toMatch(/^done +retry /m);
    expect(await retriesReceived(forge)).toEqual([]);

    // A replica in sync: by default (a replica is connected at start) claims wait for it, and every retry is sent.
    const replica = await startReplica(primary.port);
    try {
      const acted = await runCli(['once', '-c', policyFile([])], childEnv(), 60_000);
      expect(acted.code).toBe(0);
      const doneLines = acted.stdout.split('\n').filter((line) => /^done +retry /.test(line));
      expect(doneLines).toHaveLength(deferredLines.length);
      const retries = await retriesReceived(forge);
      expect(retries).toHaveLength(deferredLines.length);
      expect(new Set(retries).size).toBe(retries.length);
      // What the claims settled into is on the replica too.
      const onReplica = new Redis(replica.url);
      try {
        const entries = await Promise.all(
          (await onReplica.keys('e2e-replicas:ledger:*')).map((key) => onReplica.get(key)),
        );
        expect(entries.filter((entry) => entry?.includes('"state":"done"'))).toHaveLength(deferredLines.length);
      } finally {
        onReplica.disconnect();
      }
    } finally {
      await replica.stop();
    }
  }, 120_000);
});
