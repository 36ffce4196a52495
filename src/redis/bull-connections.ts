import { Injectable, Module } from '@nestjs/common';
import {
  closingOnPurpose,
  keepConnected,
  longLivedOptions,
  openRedis,
  type RedisClient,
  type RedisTarget,
} from './connection';

/**
 * How long a renewal waits for the blocking connection to end. A socket the peer never closes (a primary gone
 * silent) ends only when ioredis destroys it, `disconnectTimeout` (2 s by default) after disconnect(); the wait must
 * outlast that. Were it the same 2 s, it would give up first: connect() is then refused ("already connected"), the
 * socket ends a moment later for good (a disconnect() does not reconnect), and the worker fails on a closed
 * connection every few seconds until the next renewal.
 */
const END_WAIT_MS = 5_000;

/**
 * Bull leaves the connections made through a custom `createClient` open on close (it assumes they are shared), so
 * the queue module makes them here and closes them itself once the queue is closed.
 */
@Injectable()
export class BullConnections {
  private readonly clients = new Set<RedisClient>();
  private readonly blocking = new Set<RedisClient>();

  create(target: RedisTarget, type: 'client' | 'subscriber' | 'bclient'): RedisClient {
    // Bull's blocking and subscriber connections must wait out a Redis restart rather than fail commands.
    const client = openRedis(target, longLivedOptions(`forgewarden-bull-${type}`, type !== 'client'));
    keepConnected(client);
    this.clients.add(client);
    if (type === 'bclient') {
      this.blocking.add(client);
      forgiveUnawaitedSetName(client);
    }
    return client;
  }

  /** The queue is about to close its connections: from now on they may end. */
  closing(): void {
    for (const client of this.clients) closingOnPurpose(client);
  }

  /**
   * Drops the blocking connection the worker takes jobs on and opens it again, as Bull itself does on pause: the
   * command it waits in fails ("Connection is closed"), and Bull's worker asks again on the new connection. For a
   * worker whose connection never came back from a failover (a socket the old primary never closed).
   */
  async renewBlocking(): Promise<void> {
    await Promise.all(
      [...this.blocking].map(async (client) => {
        if (client.status !== 'end') {
          const ended = new Promise<void>((resolve) => {
            client.once('end', () => resolve());
            setTimeout(resolve, END_WAIT_MS).unref();
          });
          client.disconnect();
          await ended;
        }
        // From here it reconnects on its own if Redis is not there yet.
        await client.connect().catch(() => undefined);
      }),
    );
  }

  async closeAll(): Promise<void> {
    this.closing();
    await Promise.all(
      [...this.clients].map(async (client) => {
        if (client.status === 'end') return;
        if (client.status !== 'ready') return client.disconnect();
        await client.quit().catch(() => client.disconnect());
      }),
    );
    this.clients.clear();
  }
}

/**
 * Bull names its blocking connection (CLIENT SETNAME) in a promise nobody waits for (Queue#setWorkerName, when the
 * worker starts). A SIGTERM or SIGINT within a moment of start closes that connection before the name is set, the
 * rejection goes unhandled, and Node ends the process with exit 1 instead of the orderly 0. The name only labels the
 * connection in CLIENT LIST, so a SETNAME that fails on a closing connection is let go.
 */
function forgiveUnawaitedSetName(client: RedisClient): void {
  const send = client.client.bind(client) as (...args: unknown[]) => Promise<unknown>;
  (client as unknown as { client: (...args: unknown[]) => Promise<unknown> }).client = (...args: unknown[]) => {
    const answer = send(...args);
    return String(args[0]).toLowerCase() === 'setname' ? answer.catch(() => 'OK') : answer;
  };
}

@Module({ providers: [BullConnections], exports: [BullConnections] })
export class BullConnectionsModule {}
