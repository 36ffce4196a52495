import {
  closingOnPurpose,
  keepConnected,
  longLivedOptions,
  openRedis,
  redisTarget,
  type RedisClient,
} from '../../src/redis/connection';
import { waitUntil } from '../support/cli';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * ioredis ends a connection for good when its connector fails while connecting (a Sentinel connection told of a new
 * primary while it still asked the sentinels). Whatever ended it, a long-lived connection the daemon did not close
 * must come back; one it closes must stay closed.
 */
describe('a long-lived Redis connection stays open until the daemon closes it', () => {
  const opened: RedisClient[] = [];

  function open(): RedisClient {
    const client = openRedis(
      redisTarget({ url, prefix: 'it-keep-connected', connect_timeout: 1_000, replica_ack_timeout: 1_000 }),
      longLivedOptions('it-keep-connected'),
    );
    opened.push(client);
    keepConnected(client);
    return client;
  }

  afterAll(() => {
    for (const client of opened) {
      closingOnPurpose(client);
      client.disconnect();
    }
  });

  it('comes back after ending on its own, and answers again', async () => {
    const client = open();
    await waitUntil('it is ready', () => client.status === 'ready');
    let ended = false;
    client.once('end', () => (ended = true));
    // A disconnect the daemon did not say it wanted: as far as the connection knows, it ended on its own.
    client.disconnect();
    await waitUntil('it ended', () => ended);
    await waitUntil('it is ready again', () => client.status === 'ready', 10_000);
    expect(await client.ping()).toBe('PONG');
  });

  it('stays closed when closed on purpose', async () => {
    const client = open();
    await waitUntil('it is ready', () => client.status === 'ready');
    const reconnects: string[] = [];
    client.on('connecting', () => reconnects.push('connecting'));
    closingOnPurpose(client);
    await client.quit();
    // Longer than the delay after which an ended connection is opened again.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect([client.status, reconnects]).toEqual(['end', []]);
  });
});
