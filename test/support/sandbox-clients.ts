import { GitlabClient, type GitlabClientOptions } from '../../src/gitlab';
import { FakeClock } from './gitlab/fake-clock';
import { startSandbox, type RunningSandbox, type SandboxOptions, type World } from '../../src/sandbox';
import { ADMIN_TOKEN, BASE_NOW } from './world-builders';

export interface SandboxClients {
  /** The sandbox of the current test. */
  readonly sandbox: RunningSandbox;
  /**
   * A client of that sandbox with `token` (the administrator's by default), on a fake clock, without rate limiting or
   * retries, so each call is one request; the `clients` options of useSandboxClients, then `overrides`, change that.
   */
  client(token?: string, overrides?: Partial<GitlabClientOptions>): GitlabClient;
  /** Starts the test's sandbox on `world`: for tests that each seed their own (useSandboxClients without a world). */
  start(world: World): Promise<void>;
}

export interface SandboxClientsOptions {
  /** How the sandbox starts, besides its world (e.g. `bulkDeleteDelayMs`). */
  readonly sandbox?: Omit<SandboxOptions, 'world'>;
  /** Options of every client the tests make, e.g. the client's own retries where a test is about them. */
  readonly clients?: Partial<GitlabClientOptions>;
}

/**
 * A fresh sandbox per test, seeded from `world()` (or by `start`), and clients closed after each test: the setup every
 * client integration test of one API area shares.
 */
export function useSandboxClients(
  world: (() => World) | undefined,
  options: SandboxClientsOptions = {},
): SandboxClients {
  let current: RunningSandbox | undefined;
  const clients: GitlabClient[] = [];
  const start = async (seed: World): Promise<void> => {
    current = await startSandbox({ ...options.sandbox, world: seed });
  };

  if (world) beforeEach(() => start(world()));

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await current?.close();
    current = undefined;
  });

  return {
    get sandbox(): RunningSandbox {
      if (!current) throw new Error('the sandbox starts in beforeEach (or start()); use it inside a test');
      return current;
    },
    client(token = ADMIN_TOKEN, overrides: Partial<GitlabClientOptions> = {}): GitlabClient {
      const c = new GitlabClient({
        url: this.sandbox.url,
        token,
        maxRequestsPerMinute: 0,
        minWriteIntervalMs: 0,
        clock: new FakeClock(Date.parse(BASE_NOW)),
        retry: { maxAttempts: 1 },
        ...options.clients,
        ...overrides,
      });
      clients.push(c);
      return c;
    },
    start,
  };
}

/** Every item of a paginated list. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}
