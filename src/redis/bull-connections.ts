import { Injectable, Module } from '@nestjs/common';
import Redis from 'ioredis';
import { longLivedOptions, type RedisTarget } from './connection';

/**
 * Bull leaves the connections made through a custom `createClient` open on close (it assumes they are shared), so
 * the queue module makes them here and closes them itself once the queue is closed.
 */
@Injectable()
export class BullConnections {
  private readonly clients = new Set<Redis>();

  create(target: RedisTarget, type: 'client' | 'subscriber' | 'bclient'): Redis {
    // Bull's blocking and subscriber connections must wait out a Redis restart rather than fail commands.
    const client = new Redis(target.url, { ...target.options, ...longLivedOptions(`forgewarden-bull-${type}`, type !== 'client') });
    this.clients.add(client);
    return client;
  }

  async closeAll(): Promise<void> {
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

@Module({ providers: [BullConnections], exports: [BullConnections] })
export class BullConnectionsModule {}
