import type { Clock } from '../../clock';
import { FakeClock } from '../../../test/support/gitlab/fake-clock';
import { ApiError, errorFromResponse, type HttpMethod, NetworkError, TimeoutError } from './errors';
import { backoffMs, decideRetry, DEFAULT_RETRY_OPTIONS, type RetryOptions, withRetry } from './retry';

const options: RetryOptions = {
  maxAttempts: 4,
  baseDelayMs: 1000,
  maxDelayMs: 8000,
  rateLimitBaseDelayMs: 1000,
  defaultRateLimitWaitMs: 60_000,
  deadlineMs: 120_000,
};

function httpError(clock: FakeClock, status: number, headers: Record<string, string> = {}, method: HttpMethod = 'GET') {
  return errorFromResponse({
    status,
    method,
    path: 'projects/1/jobs',
    body: { message: `status ${status}` },
    headers,
    now: clock.now(),
  });
}

const refused = (method: HttpMethod) =>
  new NetworkError({ method, path: 'x', code: 'ECONNREFUSED', mayHaveReachedServer: false, message: 'refused' });
const reset = (method: HttpMethod) =>
  new NetworkError({ method, path: 'x', code: 'ECONNRESET', mayHaveReachedServer: true, message: 'reset' });
const responseTimeout = (method: HttpMethod) =>
  new TimeoutError({ method, path: 'x', code: 'UND_ERR_HEADERS_TIMEOUT', phase: 'response', message: 'timeout' });
const connectTimeout = (method: HttpMethod) =>
  new TimeoutError({ method, path: 'x', code: 'UND_ERR_CONNECT_TIMEOUT', phase: 'connect', message: 'timeout' });

/** Runs `withRetry` over a scripted series of outcomes and reports attempts, sleeps and the result. */
async function run(
  method: HttpMethod,
  outcomes: Array<Error | string>,
  clock = new FakeClock(),
  opts = options,
  retryClock: Clock = clock,
) {
  let attempts = 0;
  const result = await withRetry(
    { method },
    async () => {
      const outcome = outcomes[attempts++];
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    opts,
    retryClock,
  ).then(
    (value): { value?: string; error?: unknown } => ({ value }),
    (error: unknown) => ({ error }),
  );
  return { attempts, sleeps: clock.sleeps, ...result };
}

describe('retry layer', () => {
  it('retries a 503 and returns the later success', async () => {
    const clock = new FakeClock();
    const outcome = await run('GET', [httpError(clock, 503), 'ok'], clock);
    expect(outcome).toMatchObject({ attempts: 2, value: 'ok' });
    expect(outcome.sleeps).toEqual([500]); // full jitter: random 0.5 × base 1000
  });

  it.each([502, 504])('retries a %i on a GET', async (status) => {
    const clock = new FakeClock();
    expect(await run('GET', [httpError(clock, status), 'ok'], clock)).toMatchObject({ attempts: 2, value: 'ok' });
  });

  it('honours Retry-After in seconds', async () => {
    const clock = new FakeClock();
    const outcome = await run('GET', [httpError(clock, 429, { 'retry-after': '17' }), 'ok'], clock);
    expect(outcome).toMatchObject({ attempts: 2, value: 'ok', sleeps: [17_000] });
  });

  it('honours Retry-After as an HTTP date', async () => {
    const clock = new FakeClock();
    const at = new Date(clock.now() + 42_000).toUTCString();
    const outcome = await run('GET', [httpError(clock, 503, { 'retry-after': at }), 'ok'], clock);
    expect(outcome.sleeps).toEqual([42_000]);
  });

  it('falls back to RateLimit-Reset when a 429 has no Retry-After', async () => {
    const clock = new FakeClock();
    const reset = String(Math.floor(clock.now() / 1000) + 25);
    const outcome = await run('GET', [httpError(clock, 429, { 'ratelimit-reset': reset }), 'ok'], clock);
    expect(outcome).toMatchObject({ value: 'ok', sleeps: [25_000] });
  });

  it('prefers Retry-After over RateLimit-Reset', async () => {
    const clock = new FakeClock();
    const reset = String(Math.floor(clock.now() / 1000) + 25);
    const error = httpError(clock, 429, { 'retry-after': '3', 'ratelimit-reset': reset });
    expect((await run('GET', [error, 'ok'], clock)).sleeps).toEqual([3000]);
  });

  describe('a 429 without Retry-After or RateLimit-Reset', () => {
    const decide = (attempt: number, random: number, headers: Record<string, string> = {}, opts = options) => {
      const clock = new FakeClock();
      return decideRetry(
        httpError(clock, 429, headers),
        { method: 'GET', attempt, elapsedMs: 0, now: clock.now(), random },
        { ...opts, maxAttempts: 20 },
      );
    };
    const delay = (attempt: number, random: number) => {
      const decision = decide(attempt, random);
      if (!decision.retry) throw new Error(`not retried: ${decision.reason}`);
      return decision.delayMs;
    };

    it('starts at about a second, with equal jitter (never less than half the step)', () => {
      expect(delay(1, 0)).toBe(500);
      expect(delay(1, 0.5)).toBe(750);
      expect(delay(1, 0.999)).toBe(999);
    });

    it('doubles per attempt', () => {
      expect([1, 2, 3, 4, 5, 6].map((attempt) => delay(attempt, 0.999))).toEqual([999, 1999, 3998, 7996, 15992, 31984]);
      expect([1, 2, 3, 4, 5, 6].map((attempt) => delay(attempt, 0))).toEqual([500, 1000, 2000, 4000, 8000, 16000]);
    });

    it('stops growing at defaultRateLimitWaitMs', () => {
      expect(delay(7, 0.999)).toBe(59_970);
      expect(delay(12, 0.999)).toBe(59_970);
      expect(delay(12, 0)).toBe(30_000);
      const short = decide(12, 0.999, {}, { ...options, defaultRateLimitWaitMs: 5000 });
      expect(short).toMatchObject({ retry: true, delayMs: 4997 });
    });

    it('still honours Retry-After and RateLimit-Reset, however many attempts came before', () => {
      const clock = new FakeClock();
      expect(decide(1, 0.5, { 'retry-after': '45' })).toMatchObject({ retry: true, delayMs: 45_000 });
      const reset = String(Math.floor(clock.now() / 1000) + 7);
      expect(decide(5, 0.5, { 'ratelimit-reset': reset })).toMatchObject({ retry: true, delayMs: 7000 });
    });

    it('waits as decided in the retry loop', async () => {
      const clock = new FakeClock();
      const outcome = await run('GET', [httpError(clock, 429), httpError(clock, 429), 'ok'], clock);
      expect(outcome).toMatchObject({ attempts: 3, value: 'ok', sleeps: [750, 1500] });
    });
  });

  describe('a write marked not idempotent (bulk tag deletion)', () => {
    const runDelete = async (outcomes: Array<Error | string>, clock = new FakeClock()) => {
      let attempts = 0;
      const result = await withRetry(
        { method: 'DELETE', idempotent: false },
        async () => {
          const outcome = outcomes[attempts++];
          if (outcome instanceof Error) throw outcome;
          return outcome;
        },
        options,
        clock,
      ).then(
        (value): { value?: string; error?: unknown } => ({ value }),
        (error: unknown) => ({ error }),
      );
      return { attempts, ...result };
    };

    it.each([502, 503, 504])('is not repeated after a %i', async (status) => {
      const clock = new FakeClock();
      const error = httpError(clock, status, {}, 'DELETE');
      expect(await runDelete([error, 'ok'], clock)).toMatchObject({ attempts: 1, error });
    });

    it('is not repeated after a reset once sent, or a response timeout', async () => {
      expect(await runDelete([reset('DELETE'), 'ok'])).toMatchObject({ attempts: 1 });
      expect(await runDelete([responseTimeout('DELETE'), 'ok'])).toMatchObject({ attempts: 1 });
    });

    it('is repeated after a 429, or when the connection never left', async () => {
      const clock = new FakeClock();
      const outcome = await runDelete(
        [httpError(clock, 429, { 'retry-after': '1' }, 'DELETE'), refused('DELETE'), 'ok'],
        clock,
      );
      expect(outcome).toMatchObject({ attempts: 3, value: 'ok' });
    });

    it('says why it stopped', () => {
      const clock = new FakeClock();
      const decision = decideRetry(
        httpError(clock, 502, {}, 'DELETE'),
        { method: 'DELETE', idempotent: false, attempt: 1, elapsedMs: 0, now: clock.now(), random: 0.5 },
        options,
      );
      expect(decision).toEqual({ retry: false, reason: 'DELETE (not repeatable) answered 502 is not repeated' });
    });

    it('while an ordinary DELETE is repeated after a 502', async () => {
      const clock = new FakeClock();
      const outcome = await run('DELETE', [httpError(clock, 502, {}, 'DELETE'), 'ok'], clock);
      expect(outcome).toMatchObject({ attempts: 2, value: 'ok' });
    });
  });

  it.each([400, 401, 403, 404, 409, 422])('never retries a %i', async (status) => {
    const clock = new FakeClock();
    const error = httpError(clock, status);
    const outcome = await run('GET', [error, 'ok'], clock);
    expect(outcome).toMatchObject({ attempts: 1, error, sleeps: [] });
  });

  it.each<HttpMethod>(['GET', 'HEAD'])('retries a read answered 500, as python-gitlab does', async (method) => {
    const clock = new FakeClock();
    expect(await run(method, [httpError(clock, 500), httpError(clock, 500), 'ok'], clock)).toMatchObject({
      attempts: 3,
      value: 'ok',
    });
  });

  it.each<HttpMethod>(['PUT', 'DELETE', 'POST', 'PATCH'])(
    'does not retry a write answered 500: it may have acted',
    async (method) => {
      const clock = new FakeClock();
      expect(await run(method, [httpError(clock, 500), 'ok'], clock)).toMatchObject({ attempts: 1 });
    },
  );

  describe('writes that are not idempotent (POST, PATCH)', () => {
    it.each<HttpMethod>(['POST', 'PATCH'])('%s is not retried after a response timeout', async (method) => {
      const error = responseTimeout(method);
      expect(await run(method, [error, 'ok'])).toMatchObject({ attempts: 1, error });
    });

    it('is not retried after a reset once sent', async () => {
      const error = reset('POST');
      expect(await run('POST', [error, 'ok'])).toMatchObject({ attempts: 1, error });
    });

    it('is not retried on a 503 (a proxy may have passed it on)', async () => {
      const clock = new FakeClock();
      expect(await run('POST', [httpError(clock, 503, {}, 'POST'), 'ok'], clock)).toMatchObject({ attempts: 1 });
    });

    it('is retried when the connection was refused or the connect timed out', async () => {
      expect(await run('POST', [refused('POST'), connectTimeout('POST'), 'ok'])).toMatchObject({
        attempts: 3,
        value: 'ok',
      });
    });

    it('is retried on a 429 (refused before any work)', async () => {
      const clock = new FakeClock();
      const outcome = await run('POST', [httpError(clock, 429, { 'retry-after': '2' }, 'POST'), 'ok'], clock);
      expect(outcome).toMatchObject({ attempts: 2, value: 'ok', sleeps: [2000] });
    });
  });

  it.each<HttpMethod>(['GET', 'PUT', 'DELETE'])('%s is retried after a reset or a response timeout', async (method) => {
    expect(await run(method, [reset(method), responseTimeout(method), 'ok'])).toMatchObject({
      attempts: 3,
      value: 'ok',
    });
  });

  it('gives up after maxAttempts and rethrows the last error', async () => {
    const clock = new FakeClock();
    const errors = [503, 503, 503, 503, 503].map((s) => httpError(clock, s));
    const outcome = await run('GET', errors, clock);
    expect(outcome).toMatchObject({ attempts: 4, error: errors[3], sleeps: [500, 1000, 2000] });
  });

  it('gives up when waiting would pass the overall deadline', async () => {
    const clock = new FakeClock();
    const opts = { ...options, deadlineMs: 30_000 };
    const first = httpError(clock, 429, { 'retry-after': '20' });
    const second = httpError(clock, 429, { 'retry-after': '20' });
    const outcome = await run('GET', [first, second, 'ok'], clock, opts);
    expect(outcome).toMatchObject({ attempts: 2, error: second, sleeps: [20_000] });
  });

  it('measures the deadline on monotonic time: a wall clock stepped an hour ahead does not end the retries', async () => {
    const clock = new FakeClock();
    let wallSteps = 0;
    // Wall time jumps an hour at every reading, as after an NTP step or a resumed VM; monotonic time moves only by
    // the waits.
    const stepping: Clock = {
      now: () => clock.now() + 3_600_000 * wallSteps++,
      monotonic: () => clock.monotonic(),
      sleep: (ms) => clock.sleep(ms),
      random: () => clock.random(),
    };
    const errors = [503, 503].map((status) => httpError(clock, status));
    const outcome = await run('GET', [...errors, 'ok'], clock, options, stepping);
    expect(outcome).toMatchObject({ attempts: 3, value: 'ok' });
    expect(wallSteps).toBeGreaterThanOrEqual(2);
  });

  it('does not retry errors that are not API errors', async () => {
    const bug = new TypeError('bug');
    expect(await run('GET', [bug, 'ok'])).toMatchObject({ attempts: 1, error: bug });
  });

  it('backs off exponentially with full jitter, capped', () => {
    expect(backoffMs(1, options, 0.999)).toBe(999);
    expect(backoffMs(3, options, 0.999)).toBe(3996);
    expect(backoffMs(10, options, 0.999)).toBe(7992);
    expect(backoffMs(5, options, 0)).toBe(0);
  });

  it('explains its decisions', () => {
    const clock = new FakeClock();
    const decision = decideRetry(
      httpError(clock, 404),
      { method: 'GET', attempt: 1, elapsedMs: 0, now: clock.now(), random: 0.5 },
      DEFAULT_RETRY_OPTIONS,
    );
    expect(decision).toEqual({ retry: false, reason: '404 is final' });
    expect(httpError(clock, 404)).toBeInstanceOf(ApiError);
  });
});
