import {
  ApiError,
  certainlyNotActed,
  NetworkError,
  TimeoutError,
  ConflictError,
  errorFromResponse,
  extractMessage,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  RedirectError,
  ServerError,
  UnauthorizedError,
  ValidationError,
} from './errors';

const now = Date.UTC(2024, 0, 1, 12, 0, 0);
const make = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  errorFromResponse({ status, method: 'GET', path: 'projects/1', body, headers, now });

describe('extractMessage', () => {
  it.each<[string, unknown, string]>([
    ['{message: string}', { message: '404 Project Not Found' }, '404 Project Not Found'],
    [
      '{message: {field: [..]}}',
      { message: { fingerprint: ['has already been taken'], key: ['is invalid', 'is too short'] } },
      'fingerprint: has already been taken; key: is invalid, is too short',
    ],
    ['{error: string}', { error: 'insufficient_scope' }, 'insufficient_scope'],
    [
      '{error, error_description}',
      { error: 'invalid_token', error_description: 'Token was revoked' },
      'invalid_token: Token was revoked',
    ],
    ['plain text', 'Retry later\n', 'Retry later'],
    [
      'HTML with a title',
      '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad</h1></body></html>',
      '502 Bad Gateway',
    ],
    [
      'HTML without a title',
      '<html><body><script>x()</script><h1>We&amp;re sorry</h1><p>long text</p></body></html>',
      'We&re sorry',
    ],
    ['an empty body', undefined, 'HTTP 500'],
  ])('reads %s', (_shape, body, expected) => {
    expect(extractMessage(body, 500)).toBe(expected);
  });

  it('keeps long messages short', () => {
    expect(extractMessage('x'.repeat(5000), 500).length).toBeLessThanOrEqual(300);
  });
});

describe('errorFromResponse', () => {
  it.each<[number, new (...args: never[]) => ApiError]>([
    [400, ValidationError],
    [422, ValidationError],
    [401, UnauthorizedError],
    [403, ForbiddenError],
    [404, NotFoundError],
    [409, ConflictError],
    [429, RateLimitedError],
    [500, ServerError],
    [502, ServerError],
    [503, ServerError],
    [504, ServerError],
  ])('maps %i to its subclass', (status, type) => {
    const error = make(status, { message: 'nope' });
    expect(error).toBeInstanceOf(type);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(status);
    expect(error.method).toBe('GET');
    expect(error.path).toBe('projects/1');
    expect(error.message).toBe('nope');
    expect(error.name).toBe(type.name);
  });

  it('maps other statuses to the base class', () => {
    const error = make(405, 'Method Not Allowed');
    expect(error.constructor).toBe(ApiError);
    expect(error.message).toBe('Method Not Allowed');
  });

  it('keeps field errors of a rejected SSH key', () => {
    const error = make(400, { message: { key: ['is invalid'] } });
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual({ key: ['is invalid'] });
  });

  it('carries the wait of a 429: Retry-After seconds, HTTP date, then RateLimit-Reset', () => {
    expect((make(429, {}, { 'retry-after': '7' }) as RateLimitedError).retryAfterMs).toBe(7000);
    const date = new Date(now + 12_000).toUTCString();
    expect((make(429, {}, { 'retry-after': date }) as RateLimitedError).retryAfterMs).toBe(12_000);
    const reset = String(Math.floor(now / 1000) + 30);
    expect((make(429, {}, { 'ratelimit-reset': reset }) as RateLimitedError).retryAfterMs).toBe(30_000);
    expect((make(429, {}) as RateLimitedError).retryAfterMs).toBeUndefined();
  });

  it('never shows a token that slipped into a path', () => {
    const error = errorFromResponse({
      status: 401,
      method: 'GET',
      path: 'projects?page=2&private_token=glpat-abc&x=1',
      body: {},
      headers: {},
      now,
    });
    expect(error.path).toBe('projects?page=2&private_token=[redacted]&x=1');
  });
});

describe('redirects', () => {
  const redirect = (status: number, location: string | undefined, url = 'https://forge.test/api/v4/user') =>
    errorFromResponse({
      status,
      method: 'GET',
      path: 'user',
      body: '',
      headers: location === undefined ? {} : { location },
      now,
      url,
    }) as RedirectError;

  it.each([301, 302, 303, 307, 308])('maps %i to RedirectError', (status) => {
    expect(redirect(status, 'https://forge.test/x')).toBeInstanceOf(RedirectError);
  });

  it('leaves 304 (not a redirect: the follow endpoints answer it for "nothing changed") to the base class', () => {
    expect(make(304, '').constructor).toBe(ApiError);
  });

  it.each<[string, string, string]>([
    [
      'another host',
      'https://gitlab.example.com/api/v4/user',
      "the forge sends this host's requests to gitlab.example.com: configure the forge URL with that host if it is the forge's own",
    ],
    [
      'a sign-in page',
      '/users/sign_in',
      'it points to a sign-in page: the configured URL may reach the web front end behind a login instead of the API; ' +
        'check the configured forge URL (http or https, a missing path prefix such as /gitlab)',
    ],
  ])('suggests the likely cause: %s', (_what, location, hint) => {
    expect(redirect(302, location).message.split('; ').slice(2).join('; ')).toBe(hint);
  });

  it('resolves a relative Location against the request and never shows a token in it', () => {
    const error = redirect(302, '/api/v4/user?private_token=glpat-abc');
    expect(error.location).toBe('https://forge.test/api/v4/user?private_token=[redacted]');
    expect(error.message).not.toContain('glpat-abc');
  });
});

describe('certainlyNotActed', () => {
  const network = (code: string, mayHaveReachedServer: boolean) =>
    new NetworkError({ method: 'POST', path: 'x', code, mayHaveReachedServer, message: code });

  it.each<[string, unknown, boolean]>([
    ['a 429', make(429, { message: 'Retry later' }), true],
    ['a 401', make(401, { message: '401 Unauthorized' }), true],
    ['a refused connection', network('ECONNREFUSED', false), true],
    [
      'a connect timeout',
      new TimeoutError({ method: 'POST', path: 'x', code: 'UND_ERR_CONNECT_TIMEOUT', phase: 'connect', message: 't' }),
      true,
    ],
    ['a reset after sending', network('ECONNRESET', true), false],
    [
      'a response timeout',
      new TimeoutError({ method: 'POST', path: 'x', code: 'UND_ERR_HEADERS_TIMEOUT', phase: 'response', message: 't' }),
      false,
    ],
    ['a 500', make(500, { message: '500 Internal Server Error' }), false],
    ['a 403', make(403, { message: '403 Forbidden' }), false],
    ['a plain error', new Error('bug'), false],
  ])('%s → %s', (_what, error, expected) => {
    expect(certainlyNotActed(error)).toBe(expected);
  });
});
