import { errors as undiciErrors } from 'undici';
import { MockForge, TOKEN } from '../testing/mock-forge';
import {
  ApiError,
  ConflictError,
  ForbiddenError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
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
    forge.pool
      .intercept({ path: '/api/v4/projects/acme%2Fapi/deploy_keys', method: 'POST' })
      .reply(201, { id: 3, title: 't', key: 'ssh-ed25519 AAAA', created_at: '2024-01-01T00:00:00.000Z', can_push: true });
    const key = await forge.client().deployKeys.create('acme/api', { title: 't', key: 'ssh-ed25519 AAAA', can_push: true });
    expect(key.id).toBe(3);
    const [call] = forge.calls();
    expect(call.headers['private-token']).toBe(TOKEN);
    expect(call.headers['job-token']).toBeUndefined();
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.body).toEqual({ title: 't', key: 'ssh-ed25519 AAAA', can_push: true });
  });

  it('accepts a base URL with a sub-path or a trailing /api/v4', async () => {
    const agentPool = forge.agent.get('https://forge.test');
    agentPool.intercept({ path: '/gitlab/api/v4/user', method: 'GET' }).reply(200, { id: 1 });
    agentPool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, { id: 2 });
    expect((await forge.client({ url: 'https://forge.test/gitlab/' }).users.current()).id).toBe(1);
    expect((await forge.client({ url: 'https://forge.test/api/v4' }).users.current()).id).toBe(2);
  });

  it('uses JOB-TOKEN for the job-token endpoints, and for everything when the token is a job token', async () => {
    forge.pool.intercept({ path: '/api/v4/job', method: 'GET' }).reply(200, { id: 9 }).times(2);
    forge.pool.intercept({ path: '/api/v4/projects/1/jobs/9', method: 'GET' }).reply(200, { id: 9 });
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
        });
      const error = await forge.client().jobs.show('acme/api', 5).catch((e: unknown) => e);
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
      const error = await forge.client({ retry: { maxAttempts: 2 } }).users.current().catch((e: unknown) => e);
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
      const error = await forge.client().jobs.retry(1, 2).catch((e: unknown) => e);
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
    forge.pool.intercept({ path: '/api/v4/projects/1/jobs/2/trace', method: 'GET' }).reply(404, { message: '404 Not found' });
    expect(await forge.client().jobs.traceTail(1, 2, 1024)).toEqual({ found: false });
  });

  it('returns the whole log from trace()', async () => {
    forge.pool.intercept({ path: '/api/v4/projects/1/jobs/2/trace', method: 'GET' }).reply(200, 'all of it\n');
    expect(await forge.client().jobs.trace(1, 2)).toBe('all of it\n');
  });
});
