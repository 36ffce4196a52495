import { GitlabClient } from '../../src/gitlab';
import { FakeClock } from './gitlab/fake-clock';
import { startSandbox, type RunningSandbox, type World } from '../../src/sandbox';
import { ADMIN_TOKEN, BASE_NOW } from './world-builders';

export interface SandboxClients {
  /** The sandbox of the current test. */
  readonly sandbox: RunningSandbox;
  /** A client of that sandbox with `token`, without rate limiting or retries, so each call is one request. */
  client(token?: string): GitlabClient;
}

/**
 * A fresh sandbox per test, seeded from `world()`, and clients closed after each test: the setup every client
 * integration test of one API area shares.
 */
export function useSandboxClients(world: () => World): SandboxClients {
  let current: RunningSandbox | undefined;
  const clients: GitlabClient[] = [];

  beforeEach(async () => {
    current = await startSandbox({ world: world() });
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await current?.close();
  });

  return {
    get sandbox(): RunningSandbox {
      if (!current) throw new Error('the sandbox starts in beforeEach; use it inside a test');
      return current;
    },
    client(token = ADMIN_TOKEN): GitlabClient {
      const c = new GitlabClient({
        url: this.sandbox.url,
        token,
        maxRequestsPerMinute: 0,
        minWriteIntervalMs: 0,
        clock: new FakeClock(Date.parse(BASE_NOW)),
        retry: { maxAttempts: 1 },
      });
      clients.push(c);
      return c;
    },
  };
}

/** Every item of a paginated list. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}
