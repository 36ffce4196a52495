import { createServer, type Server, type Socket } from 'node:net';
import type { RedisClient, RedisTarget } from './connection';
import { BullConnections } from './bull-connections';

/**
 * A server that answers +OK to every command (enough for ioredis' handshake) until silence() is called; from then on
 * the connections it has answer nothing and are never closed from its side, not even when the client ends its own:
 * a primary gone silent under a connection. Connections made after silence() are answered again.
 */
class SilencingServer {
  readonly sockets: Socket[] = [];
  private readonly silent = new Set<Socket>();
  private readonly server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    this.sockets.push(socket);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      if (this.silent.has(socket)) return;
      const commands = chunk.toString('latin1').match(/(?:^|\r\n)\*\d+\r\n/g)?.length ?? 0;
      socket.write('+OK\r\n'.repeat(commands));
    });
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  silence(): void {
    for (const socket of this.sockets) this.silent.add(socket);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function ready(client: RedisClient): Promise<void> {
  return new Promise((resolve) => (client.status === 'ready' ? resolve() : client.once('ready', () => resolve())));
}

describe('BullConnections.renewBlocking', () => {
  let server: SilencingServer;
  let client: RedisClient | undefined;

  beforeEach(() => {
    server = new SilencingServer();
  });

  afterEach(async () => {
    client?.disconnect();
    await server.close();
  });

  it('makes the blocking connection anew when the server never closes the old one', async () => {
    const url = `redis://127.0.0.1:${await server.listen()}`;
    const target: RedisTarget = {
      topology: 'server',
      where: url,
      setting: 'REDIS_URL',
      url,
      nodes: [],
      options: {},
      sentinelOptions: {},
    };
    const connections = new BullConnections();
    client = connections.create(target, 'bclient');
    client.on('error', () => undefined);
    await ready(client);
    expect(server.sockets.length).toBe(1);
    server.silence();

    await connections.renewBlocking();

    // A second connection, and the client on it: not left ended once the old socket is finally dropped.
    await ready(client);
    expect(server.sockets.length).toBe(2);
    expect(client.status).toBe('ready');
  }, 20_000);
});
