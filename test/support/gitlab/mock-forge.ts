import { MockAgent, type MockPool } from 'undici';
import { GitlabClient, type GitlabClientOptions } from '../../../src/gitlab/client';
import type { RateLimitOptions } from '../../../src/gitlab/transport/rate-limit';
import { FakeClock } from './fake-clock';

export const ORIGIN = 'https://forge.test';
export const TOKEN = 'glpat-secret-token-value';

export interface RecordedCall {
  method: string;
  /** Path as sent, with its query string. */
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * A forge double on undici's MockAgent for unit tests: no network, every request recorded. Interceptors are
 * registered on `pool`; `client()` builds a GitlabClient wired to it with a fake clock and no rate budget.
 */
export class MockForge {
  readonly agent = new MockAgent({ enableCallHistory: true });
  readonly pool: MockPool;
  readonly clock = new FakeClock();

  constructor() {
    this.agent.disableNetConnect();
    this.pool = this.agent.get(ORIGIN);
  }

  client(options: Partial<GitlabClientOptions> = {}): GitlabClient {
    return new GitlabClient({
      url: ORIGIN,
      token: TOKEN,
      maxRequestsPerMinute: 0,
      minWriteIntervalMs: 0,
      dispatcher: this.agent,
      clock: this.clock,
      ...options,
    });
  }

  calls(): RecordedCall[] {
    return (this.agent.getCallHistory()?.calls() ?? []).map((call) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(call.headers ?? {})) {
        headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
      }
      let body: unknown = call.body ?? undefined;
      if (typeof body === 'string' && body !== '') body = JSON.parse(body) as unknown;
      const path = call.fullUrl.startsWith(ORIGIN) ? call.fullUrl.slice(ORIGIN.length) : call.fullUrl;
      return { method: call.method, path, headers, body };
    });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Limiter options with every limit off but the ones a test sets: no budget, no write spacing, eight in flight. */
export const OPEN_LIMITER: Partial<RateLimitOptions> = {
  maxRequestsPerMinute: 0,
  concurrency: 8,
  minWriteIntervalMs: 0,
  lowRemainingRatio: 0.1,
  windowMs: 60_000,
};
