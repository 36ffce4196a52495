import Redis, { Cluster } from 'ioredis';
import { isAlive } from '../support/redis-server';
import {
  startCluster,
  startSentinelTopology,
  stopAllTopologies,
  type RedisClusterTopology,
  type SentinelTopology,
} from '../support/redis-topology';

/** The port of the server a client is connected to now: proof of where its commands went. */
async function servingPort(client: Redis): Promise<number> {
  const info = await client.info('server');
  return Number(/^tcp_port:(\d+)/m.exec(info)?.[1]);
}

afterAll(async () => {
  await stopAllTopologies();
}, 60_000);

describe('a Sentinel topology of real redis-servers', () => {
  let topology: SentinelTopology;
  let client: Redis;

  beforeAll(async () => {
    topology = await startSentinelTopology();
    client = new Redis({ sentinels: topology.sentinels, name: topology.masterName });
    // While the primary is down the client reports each failed reconnection; the tests look at what it serves after.
    client.on('error', () => undefined);
  }, 90_000);

  afterAll(async () => {
    client?.disconnect();
    await topology?.stop();
  }, 60_000);

  /** Writes through the Sentinel client and waits for the replica to have it: an unreplicated write may be lost. */
  async function writeReplicated(key: string, value: string): Promise<void> {
    await client.set(key, value);
    expect(await client.wait(1, 10_000)).toBe(1);
  }

  it('names the primary it started, with the replica and three sentinels', async () => {
    expect(topology.dataPorts).toHaveLength(2);
    expect(topology.sentinels).toHaveLength(3);
    expect(topology.sentinelAddresses).toEqual(topology.sentinels.map(({ host, port }) => `${host}:${port}`));
    expect(await topology.primaryPort()).toBe(topology.dataPorts[0]);
  });

  it('keeps a value through a requested failover, and the client follows to the new primary', async () => {
    await writeReplicated('topology:before-failover', 'kept');
    const before = await topology.primaryPort();

    const { from, to } = await topology.failover();

    expect(from).toBe(before);
    expect(to).not.toBe(from);
    expect(await topology.primaryPort()).toBe(to);
    expect(await client.get('topology:before-failover')).toBe('kept');
    expect(await servingPort(client)).toBe(to);
  }, 90_000);

  it('keeps a value through the primary being killed, and a killed server comes back as a replica', async () => {
    await writeReplicated('topology:before-kill', 'kept');

    const { killed } = await topology.killPrimary();
    const promoted = await topology.waitForPrimaryOtherThan(killed);

    expect(promoted).not.toBe(killed);
    expect(await client.get('topology:before-kill')).toBe('kept');
    expect(await client.get('topology:before-failover')).toBe('kept');
    expect(await servingPort(client)).toBe(promoted);

    await topology.restart(killed);
    const restarted = new Redis({ host: '127.0.0.1', port: killed });
    try {
      const replication = await restarted.info('replication');
      expect(replication).toMatch(/^role:slave/m);
      expect(replication).toContain(`master_port:${promoted}`);
      expect(await restarted.get('topology:before-kill')).toBe('kept');
    } finally {
      restarted.disconnect();
    }
  }, 90_000);

  it('stops every process it started', async () => {
    const pids = topology.pids();
    expect(pids.length).toBeGreaterThanOrEqual(5);
    client.disconnect();

    await topology.stop();

    expect(pids.filter(isAlive)).toEqual([]);
  }, 60_000);
});

describe('a Redis Cluster of real redis-servers', () => {
  let cluster: RedisClusterTopology;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startCluster();
    client = new Redis.Cluster(cluster.nodeAddresses);
    client.on('error', () => undefined);
  }, 90_000);

  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  }, 60_000);

  it('serves keys of every slot range, each from the node that owns it', async () => {
    expect(cluster.nodes).toHaveLength(3);
    const keys = Array.from({ length: 30 }, (_, i) => `topology:key-${i}`);

    for (const key of keys) await client.set(key, `value of ${key}`);

    for (const key of keys) expect(await client.get(key)).toBe(`value of ${key}`);
    const slots = await Promise.all(keys.map((key) => client.cluster('KEYSLOT', key)));
    expect(new Set(slots).size).toBeGreaterThan(1);
    // Each primary holds some of them: the client routed by slot rather than sending everything to one node.
    for (const { host, port } of cluster.nodes) {
      const node = new Redis({ host, port });
      try {
        expect(await node.dbsize()).toBeGreaterThan(0);
      } finally {
        node.disconnect();
      }
    }
  }, 60_000);

  it('runs a script over two keys that share a hash tag', async () => {
    const script =
      "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[2]); return redis.call('MGET', KEYS[1], KEYS[2])";

    const result = await client.eval(script, 2, '{t}:first', '{t}:second', 'one', 'two');

    expect(result).toEqual(['one', 'two']);
    expect(await client.get('{t}:second')).toBe('two');
  }, 60_000);

  it('stops every process it started', async () => {
    const pids = cluster.pids();
    expect(pids).toHaveLength(3);
    client.disconnect();

    await cluster.stop();

    expect(pids.filter(isAlive)).toEqual([]);
  }, 60_000);
});
