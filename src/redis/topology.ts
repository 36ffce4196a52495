import Redis, { Cluster } from 'ioredis';
import type { RedisClient } from './connection';

/**
 * Every key matching `match`, in batches. A Cluster's keys are spread over its primaries (Forgewarden's all sit in
 * one slot, but a SCAN is answered by one node), so each primary is scanned in turn.
 */
export async function* scanKeys(client: RedisClient, match: string, count: number): AsyncGenerator<string[]> {
  const servers = client instanceof Cluster ? client.nodes('master') : [client];
  for (const server of servers) {
    for await (const batch of server.scanStream({ match, count }) as AsyncIterable<string[]>) yield batch;
  }
}

/**
 * The connection that carries `key`'s commands: the client itself, or in a Cluster its connection to the primary of
 * the key's slot. A WAIT, an INFO or a run id asked there speaks of the server that holds the key.
 */
export async function serverOf(client: RedisClient, key: string): Promise<Redis> {
  if (!(client instanceof Cluster)) return client;
  const slot = Number(await client.cluster('KEYSLOT', key));
  const address = client.slots[slot]?.[0];
  const node = client
    .nodes('master')
    .find((candidate) => `${candidate.options.host}:${candidate.options.port}` === address);
  if (!node) throw new Error(`no cluster node serves slot ${slot} yet`);
  return node;
}

/** One field of an INFO section (`connected_slaves`, `run_id`, `maxmemory_policy`), or undefined. */
export async function infoField(server: Redis, section: string, field: string): Promise<string | undefined> {
  const text = await server.info(section);
  return new RegExp(`^${field}:(.*)$`, 'm').exec(text)?.[1]?.trim();
}
