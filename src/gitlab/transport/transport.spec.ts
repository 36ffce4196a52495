import { errors as undiciErrors } from 'undici';
import { MockForge, TOKEN } from '../../../test/support/gitlab/mock-forge';
import { aCurrentUser, aJob, aTag } from '../../../test/support/gitlab/records';
import {
  ApiError,
  ConflictError,
  ForbiddenError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  RedirectError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
  ValidationError,
} from './errors';
import type { ResponseEvent } from './transport';

describe('transport over HTTP (MockAgent)', () => {
  let forge: MockForge;
  beforeEach(() => {
    forge = new MockForge();
  });
  afterEach(async () => {
    await forge.close();
  });

  it('sends PRIVATE-TOKEN, JSON and the encoded path under /api/v4', async () => {
    forge.pool.intercept({ path: '/api/v4/projects/acme%2Fapi/deploy_keys', method: 'POST' }).reply(201, {
      id: 3,
      title: 't',
      key: 'ssh-ed25519 AAAA',
      created_at: '2024-01-01T00:00:00.000Z',
      can_push: true,
    });
    const key = await forge
      .client()
      .deployKeys.create('acme/api', { title: 't', key: 'ssh-ed25519 AAAA', can_push: true });
    expect(key.id).toBe(3);
    const [call] = forge.calls();
    expect(call.headers['private-token']).toBe(TOKEN);
    expect(call.headers['job-token']).toBeUndefined();
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.body).toEqual({ title: 't', key: 'ssh-ed25519 AAAA', can_push: true });
  });

  it('accepts a base URL with a sub-path or a trailing /api/v4', async () => {
    const agentPool = forge.agent.get('https://forge.test');
    agentPool.intercept({ path: '/gitlab/api/v4/user', method: 'GET' }).reply(200, aCurrentUser({ id: 1 }));
    agentPool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, aCurrentUser({ id: 2 }));
    expect((await forge.client({ url: 'https://forge.test/gitlab/' }).users.current()).id).toBe(1);
    expect((await forge.client({ url: 'https://forge.test/api/v4' }).users.current()).id).toBe(2);
  });

  it('uses JOB-TOKEN for the job-token endpoints, and for everything when the token is a job token', async () => {
    forge.pool.intercept({ path: '/api/v4/job', method: 'GET' }).reply(200, { id: 9 }).times(2);
    forge.pool.intercept({ path: '/api/v4/projects/1/jobs/9', method: 'GET' }).reply(200, aJob({ id: 9 }));
    await forge.client().jobs.current('job-token-xyz');
    await forge.client({ tokenKind: 'job' }).jobs.current();
    await forge.client({ tokenKind: 'job' }).jobs.show(1, 9);
    const calls = forge.calls();
    expect(calls[0].headers['job-token']).toBe('job-token-xyz');
    expect(calls[0].headers['private-token']).toBeUndefined();
    expect(calls[1].headers['job-token']).toBe(TOKEN);
    expect(calls[2].headers['job-token']).toBe(TOKEN);
    expect(calls[2].headers['private-token']).toBeUndefined();
  });

  describe('a token that changes under the client', () => {
    /** A source whose value moves from `first` to `second` when it is asked to refresh after a 401. */
    function rotatingSource(first: string, second: string) {
      let value = first;
      const refreshed: string[] = [];
      return {
        refreshed,
        source: {
          current: () => value,
          refresh: (rejected: string) => {
            refreshed.push(rejected);
            const changed = value !== second;
            value = second;
            return Promise.resolve(changed);
          },
        },
      };
    }

    it('reads the source at every request, and sends a read once more with the value it holds after a 401', async () => {
      const rotating = rotatingSource('old-token', 'new-token');
      forge.pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, { message: '401 Unauthorized' });
      forge.pool
        .intercept({ path: '/api/v4/user', method: 'GET' })
        .reply(200, aCurrentUser({ id: 7 }))
        .times(2);
      const client = forge.client({ token: rotating.source });
      expect((await client.users.current()).id).toBe(7);
      expect((await client.users.current()).id).toBe(7);
      expect(forge.calls().map((call) => call.headers['private-token'])).toEqual([
        'old-token',
        'new-token',
        'new-token',
      ]);
      expect(rotating.refreshed).toEqual(['old-token']);
    });

    it('never sends a POST again after a 401, though the source moves on for the next request', async () => {
      const rotating = rotatingSource('old-token', 'new-token');
      forge.pool
        .intercept({ path: '/api/v4/personal_access_tokens/5/rotate', method: 'POST' })
        .reply(401, { message: '401 Unauthorized' });
      forge.pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, aCurrentUser({ id: 7 }));
      const client = forge.client({ token: rotating.source });
      await expect(client.personalAccessTokens.rotate(5, { expires_at: '2025-09-01' })).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
      await client.users.current();
      expect(forge.calls().map((call) => [call.path, call.headers['private-token']])).toEqual([
        ['/api/v4/personal_access_tokens/5/rotate', 'old-token'],
        ['/api/v4/user', 'new-token'],
      ]);
    });

    it('takes the current token at every attempt, so a retry after a 429 carries the token in use then', async () => {
      let value = 'first-token';
      // The token is rotated while the forge answers the first attempt.
      forge.pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(() => {
        value = 'second-token';
        return { statusCode: 429, data: 'Retry later', responseOptions: { headers: { 'retry-after': '1' } } };
      });
      forge.pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, aCurrentUser({ id: 7 }));
      const client = forge.client({
        token: { current: () => value, refresh: () => Promise.resolve(false) },
        retry: { maxAttempts: 2 },
      });
      expect((await client.users.current()).id).toBe(7);
      expect(forge.calls().map((call) => call.headers['private-token'])).toEqual(['first-token', 'second-token']);
    });

    it('gives up after one more try, and does not ask again when the source has nothing new', async () => {
      const rotating = rotatingSource('same-token', 'same-token');
      forge.pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, { message: '401 Unauthorized' });
      await expect(forge.client({ token: rotating.source }).users.current()).rejects.toBeInstanceOf(UnauthorizedError);
      expect(forge.calls()).toHaveLength(1);
      expect(rotating.refreshed).toEqual(['same-token']);
    });
  });

  describe('error shapes', () => {
    const cases: Array<[string, number, unknown, Record<string, string>, new (...a: never[]) => ApiError, string]> = [
      ['{message}', 404, { message: '404 Project Not Found' }, {}, NotFoundError, '404 Project Not Found'],
      [
        '{message: {field: [..]}}',
        400,
        { message: { fingerprint: ['has already been taken'] } },
        {},
        ValidationError,
        'fingerprint: has already been taken',
      ],
      ['422', 422, { message: 'name is invalid' }, {}, ValidationError, 'name is invalid'],
      ['{error}', 401, { error: 'invalid_token' }, {}, UnauthorizedError, 'invalid_token'],
      ['plain text', 403, '403 Forbidden', { 'content-type': 'text/plain' }, ForbiddenError, '403 Forbidden'],
      ['409', 409, { message: 'User cannot be removed' }, {}, ConflictError, 'User cannot be removed'],
      [
        'HTML',
        500,
        '<html><head><title>500 Internal Server Error</title></head><body>oops</body></html>',
        { 'content-type': 'text/html' },
        ServerError,
        '500 Internal Server Error',
      ],
    ];
    it.each(cases)('maps %s to its subclass and message', async (_name, status, body, headers, type, message) => {
      forge.pool
        .intercept({ path: '/api/v4/projects/acme%2Fapi/jobs/5', method: 'GET' })
        .reply(status, typeof body === 'string' ? body : JSON.stringify(body), {
          headers: { 'content-type': 'application/json', ...headers },
        })
        // A read answered 500 is tried again; every try gets the same answer.
        .persist();
      const error = await forge
        .client()
        .jobs.show('acme/api', 5)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(type);
      expect(error).toMatchObject({ status, method: 'GET', path: 'projects/acme%2Fapi/jobs/5', message });
      expect(JSON.stringify(error)).not.toContain(TOKEN);
      expect((error as ApiError).path).not.toContain(TOKEN);
    });

    it('raises RateLimitedError with retryAfterMs when retries are exhausted', async () => {
      forge.pool
        .intercept({ path: '/api/v4/user', method: 'GET' })
        .reply(429, { message: 'Retry later' }, { headers: { 'retry-after': '4' } })
        .times(2);
      const error = await forge
        .client({ retry: { maxAttempts: 2 } })
        .users.current()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitedError);
      expect((error as RateLimitedError).retryAfterMs).toBe(4000);
      expect(forge.calls()).toHaveLength(2);
      expect(forge.clock.sleeps).toContain(4000);
    });
  });

  describe('network failures', () => {
    const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });

    it('maps connection refused to a NetworkError that never reached the server, and retries even a POST', async () => {
      forge.pool.intercept({ path: '/api/v4/projects/1/jobs/2/retry', method: 'POST' }).replyWithError(refused());
      forge.pool.intercept({ path: '/api/v4/projects/1/jobs/2/retry', method: 'POST' }).reply(201, { id: 3 });
      expect((await forge.client().jobs.retry(1, 2)).id).toBe(3);
      expect(forge.calls()).toHaveLength(2);
    });

    it('does not retry a POST after a response timeout', async () => {
      forge.pool
        .intercept({ path: '/api/v4/projects/1/jobs/2/retry', method: 'POST' })
        .replyWithError(new undiciErrors.HeadersTimeoutError());
      forge.pool.intercept({ path: '/api/v4/projects/1/jobs/2/retry', method: 'POST' }).reply(201, { id: 3 });
      const error = await forge
        .client()
        .jobs.retry(1, 2)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TimeoutError);
      expect(error).toBeInstanceOf(NetworkError);
      expect(error).toMatchObject({ phase: 'response', mayHaveReachedServer: true, status: 0, method: 'POST' });
      expect(forge.calls()).toHaveLength(1);
    });

    it('retries a GET after a reset and reports every attempt', async () => {
      const events: ResponseEvent[] = [];
      forge.pool
        .intercept({ path: '/api/v4/namespaces/acme', method: 'GET' })
        .replyWithError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      forge.pool.intercept({ path: '/api/v4/namespaces/acme', method: 'GET' }).reply(503, 'busy');
      forge.pool.intercept({ path: '/api/v4/namespaces/acme', method: 'GET' }).reply(200, { id: 4 });
      const ns = await forge.client({ onResponse: (e) => events.push(e) }).namespaces.show('acme');
      expect(ns.id).toBe(4);
      expect(events.map((e) => [e.method, e.route, e.status])).toEqual([
        ['GET', 'namespaces/:param', 'network_error'],
        ['GET', 'namespaces/:param', 503],
        ['GET', 'namespaces/:param', 200],
      ]);
    });
  });

  describe('bulk tag deletion is sent at most once when it may have reached the forge', () => {
    const bulk = (p: string) => p.startsWith('/api/v4/projects/1/registry/repositories/9/tags?');
    const removeTags = () =>
      forge
        .client()
        .registry.removeTags(1, 9, { name_regex_delete: '.*' })
        .catch((e: unknown) => e);

    it.each([502, 503, 504])('a %i is not followed by a second DELETE', async (status) => {
      forge.pool.intercept({ path: bulk, method: 'DELETE' }).reply(status, { message: 'bad gateway' });
      forge.pool.intercept({ path: bulk, method: 'DELETE' }).reply(202, '');
      const error = await removeTags();
      expect(error).toBeInstanceOf(ServerError);
      expect(error).toMatchObject({ status, method: 'DELETE' });
      expect(forge.calls().filter((c) => c.method === 'DELETE')).toHaveLength(1);
    });

    it('nor a reset after sending, nor a response timeout', async () => {
      forge.pool
        .intercept({ path: bulk, method: 'DELETE' })
        .replyWithError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      forge.pool.intercept({ path: bulk, method: 'DELETE' }).replyWithError(new undiciErrors.HeadersTimeoutError());
      forge.pool.intercept({ path: bulk, method: 'DELETE' }).reply(202, '').times(2);
      const reset = await removeTags();
      expect(reset).toBeInstanceOf(NetworkError);
      expect(reset).toMatchObject({ mayHaveReachedServer: true });
      const timeout = await removeTags();
      expect(timeout).toBeInstanceOf(TimeoutError);
      expect(forge.calls()).toHaveLength(2); // one per call, none repeated
    });

    it('a 429 (refused before any work) and a refused connection are retried', async () => {
      forge.pool
        .intercept({ path: bulk, method: 'DELETE' })
        .reply(429, { message: 'Retry later' }, { headers: { 'retry-after': '2' } });
      forge.pool
        .intercept({ path: bulk, method: 'DELETE' })
        .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      forge.pool.intercept({ path: bulk, method: 'DELETE' }).reply(202, '');
      await expect(forge.client().registry.removeTags(1, 9, { name_regex_delete: '.*' })).resolves.toBeUndefined();
      expect(forge.calls()).toHaveLength(3);
    });

    it('while a GET answered 502 is retried', async () => {
      forge.pool
        .intercept({ path: '/api/v4/projects/1/registry/repositories/9/tags/v1', method: 'GET' })
        .reply(502, 'Bad Gateway');
      forge.pool
        .intercept({ path: '/api/v4/projects/1/registry/repositories/9/tags/v1', method: 'GET' })
        .reply(200, aTag({ name: 'v1' }));
      expect((await forge.client().registry.showTag(1, 9, 'v1')).name).toBe('v1');
      expect(forge.calls().map((c) => c.method)).toEqual(['GET', 'GET']);
    });
  });

  describe('redirects', () => {
    it('are an error naming Location and the likely cause (http instead of https), neither followed nor retried', async () => {
      const plain = forge.agent.get('http://forge.test');
      plain
        .intercept({ path: '/api/v4/projects/1/jobs/5', method: 'GET' })
        .reply(301, '<html>Moved</html>', { headers: { location: 'https://forge.test/api/v4/projects/1/jobs/5' } })
        .persist();
      forge.pool.intercept({ path: '/api/v4/projects/1/jobs/5', method: 'GET' }).reply(200, aJob({ id: 5 }));
      const error = await forge
        .client({ url: 'http://forge.test' })
        .jobs.show(1, 5)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedirectError);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({
        status: 301,
        method: 'GET',
        location: 'https://forge.test/api/v4/projects/1/jobs/5',
      });
      expect((error as RedirectError).message).toBe(
        'the forge answered 301 pointing to https://forge.test/api/v4/projects/1/jobs/5; not followed, so the token ' +
          'stays with the configured forge; the forge wants https: configure the forge URL as https://forge.test',
      );
      // One request, to the configured (http) origin; the https target was never asked, with or without the token.
      expect(forge.calls()).toEqual([
        expect.objectContaining({ method: 'GET', path: 'http://forge.test/api/v4/projects/1/jobs/5' }),
      ]);
    });

    it('of a POST name a missing path prefix, and the POST is sent once', async () => {
      forge.pool
        .intercept({ path: '/api/v4/projects/1/jobs/2/retry', method: 'POST' })
        .reply(308, '', { headers: { location: '/gitlab/api/v4/projects/1/jobs/2/retry' } })
        .persist();
      forge.pool
        .intercept({ path: '/gitlab/api/v4/projects/1/jobs/2/retry', method: 'POST' })
        .reply(201, aJob({ id: 3 }));
      const error = await forge
        .client()
        .jobs.retry(1, 2)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedirectError);
      expect(error).toMatchObject({
        status: 308,
        method: 'POST',
        location: 'https://forge.test/gitlab/api/v4/projects/1/jobs/2/retry',
      });
      expect((error as Error).message).toContain(
        'pointing to https://forge.test/gitlab/api/v4/projects/1/jobs/2/retry',
      );
      expect((error as Error).message).toContain(
        'the forge is served under /gitlab: add it to the configured forge URL (https://forge.test/gitlab)',
      );
      expect(forge.calls().map((c) => [c.method, c.path])).toEqual([['POST', '/api/v4/projects/1/jobs/2/retry']]);
    });

    it.each([302, 303, 307])('a %i without Location still says what to check', async (status) => {
      forge.pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(status, '');
      const error = await forge
        .client()
        .users.current()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedirectError);
      expect(error).toMatchObject({ status, location: undefined });
      expect((error as Error).message).toBe(
        `the forge answered ${status} without a Location; not followed, so the token stays with the configured forge; ` +
          'check the configured forge URL (http or https, a missing path prefix such as /gitlab)',
      );
      expect(forge.calls()).toHaveLength(1);
    });
  });

  it('returns undefined for 204 answers', async () => {
    forge.pool.intercept({ path: '/api/v4/user/keys/5', method: 'DELETE' }).reply(204, '');
    await expect(forge.client().sshKeys.remove(5)).resolves.toBeUndefined();
  });
});

describe('jobs.traceTail', () => {
  let forge: MockForge;
  beforeEach(() => {
    forge = new MockForge();
  });
  afterEach(async () => {
    await forge.close();
  });

  it('keeps only the end of the log', async () => {
    const log = Array.from({ length: 20_000 }, (_, i) => `step ${i}\n`).join('') + 'ERROR: connection reset by peer\n';
    forge.pool
      .intercept({ path: '/api/v4/projects/acme%2Fapi/jobs/812/trace', method: 'GET' })
      .reply(200, log, { headers: { 'content-type': 'text/plain' } });
    const tail = await forge.client().jobs.traceTail('acme/api', 812, 64);
    expect(tail).toEqual({
      found: true,
      text: log.slice(-64),
      truncated: true,
      totalBytes: Buffer.byteLength(log),
    });
  });

  it('says the log is gone on 404', async () => {
    forge.pool
      .intercept({ path: '/api/v4/projects/1/jobs/2/trace', method: 'GET' })
      .reply(404, { message: '404 Not found' });
    expect(await forge.client().jobs.traceTail(1, 2, 1024)).toEqual({ found: false });
  });

  it('returns the whole log from trace()', async () => {
    forge.pool.intercept({ path: '/api/v4/projects/1/jobs/2/trace', method: 'GET' }).reply(200, 'all of it\n');
    expect(await forge.client().jobs.trace(1, 2)).toBe('all of it\n');
  });
});
