import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Redis from 'ioredis';
import { createApp } from '../../src/bootstrap';
import { parseConfig } from '../../src/config/load';
import { ClientClosedError, GitlabClient } from '../../src/gitlab';
import { AppLogger } from '../../src/logging/logger';
import { POLICY_TYPES } from '../../src/policies';
import { REDIS } from '../../src/redis/redis.module';
import { waitUntil } from '../support/cli';
import { MemoryStream } from '../support/memory-stream';

/** A forge that holds every request until the test lets it answer. */
async function heldForge(): Promise<{ server: Server; url: string; received: string[]; answer: () => void }> {
  const received: string[] = [];
  const held: ServerResponse[] = [];
  let answering = false;
  const reply = (response: ServerResponse) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ version: '17.0.0', revision: 'abc' }));
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    received.push(`${request.method} ${request.url}`);
    if (answering) reply(response);
    else held.push(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    server,
    url,
    received,
    answer: () => {
      answering = true;
      for (const response of held.splice(0)) reply(response);
    },
  };
}

/** The commands a connection sends, in order, by name. */
function recordCommands(redis: Redis): string[] {
  const sent: string[] = [];
  const original = redis.sendCommand.bind(redis);
  redis.sendCommand = (command: { name: string }, stream?: unknown) => {
    sent.push(command.name.toLowerCase());
    return original(command as never, stream as never);
  };
  return sent;
}

/**
 * Closing the application (a `once` that ends, a pass that failed, a daemon stopping) while a request is in flight:
 * the request already sent finishes, those still waiting are not sent, and Redis closes only after the shared budget
 * is done with it.
 */
describe('shutting down in order', () => {
  let forge: Awaited<ReturnType<typeof heldForge>>;

  beforeEach(async () => {
    forge = await heldForge();
  });

  afterEach(async () => {
    forge.server.closeAllConnections();
    await new Promise((resolve) => forge.server.close(resolve));
  });

  it('lets the request in flight finish, sends none of those waiting, and closes Redis last', async () => {
    const prefix = `it-shutdown-order-${process.pid}-${Date.now()}`;
    const config = parseConfig(
      [
        'version: 1',
        `gitlab: { url: "${forge.url}", token: "glpat-integration-000000", concurrency: 1, max_requests_per_minute: 6000 }`,
        `redis: { url: "${process.env.REDIS_URL}", prefix: "${prefix}", connect_timeout: 2s }`,
        'http: { port: 0 }',
      ].join('\n'),
      'test.yml',
      { policyTypes: POLICY_TYPES, env: {} },
    );
    const stream = new MemoryStream();
    const streamErrors: unknown[] = [];
    stream.on('error', (error) => streamErrors.push(error));
    const logger = new AppLogger({ level: 'debug', format: 'json', stream });
    const { app } = await createApp(config, 'test.yml', logger, { http: false });
    const sent = recordCommands(app.get<Redis>(REDIS));
    const client = app.get(GitlabClient);

    const outcomes = [client.version.show(), client.version.show(), client.version.show()].map((request) =>
      request.then(
        () => 'answered',
        (error: unknown) => (error instanceof ClientClosedError ? 'not sent' : `failed: ${String(error)}`),
      ),
    );
    await waitUntil('the first request reaches the forge', () => forge.received.length === 1);

    const closed = app.close();
    // The close waits for the request in flight; the forge answers it only now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    forge.answer();
    await closed;
    await logger.flush();

    expect(await Promise.all(outcomes)).toEqual(['answered', 'not sent', 'not sent']);
    expect(forge.received).toEqual(['GET /api/v4/version']);
    // One budget call for the one request sent, and nothing after QUIT.
    expect(sent.filter((name) => name === 'evalsha' || name === 'eval')).toHaveLength(1);
    expect(sent.at(-1)).toBe('quit');
    expect(streamErrors).toEqual([]);
  });
});
