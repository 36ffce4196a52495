import { Logger } from '@nestjs/common';
import { MemoryStream } from '../../test/support/memory-stream';
import { AppLogger, parseLogLevel } from './logger';
import { Redactor, REDACTED } from './redact';

const CONFIGURED_TOKEN = 'plain-configured-secret-42';
const FORGE_TOKEN = 'glpat-Ab3dEf6hIj9kLm2nOp5q';

function redactorWithToken(): Redactor {
  const redactor = new Redactor();
  redactor.addSecret(CONFIGURED_TOKEN);
  return redactor;
}

describe('Redactor', () => {
  const redactor = redactorWithToken();

  it.each([
    ['the configured token', `using ${CONFIGURED_TOKEN} now`, `using ${REDACTED} now`],
    ['a personal access token', `token ${FORGE_TOKEN}.`, `token glpat-${REDACTED}.`],
    ['a deploy token', 'gldt-abcdefghijklmnop', `gldt-${REDACTED}`],
    ['a PRIVATE-TOKEN header', 'PRIVATE-TOKEN: abc123secret', `PRIVATE-TOKEN: ${REDACTED}`],
    ['a JOB-TOKEN header in JSON', '{"JOB-TOKEN":"jobsecret99"}', `{"JOB-TOKEN":"${REDACTED}"}`],
    ['a bearer header', 'authorization: Bearer eyJhbGciOi', `authorization: Bearer ${REDACTED}`],
    [
      'token= in a URL',
      'GET https://x/api/v4/jobs?private_token=s3cr3t&page=2',
      `GET https://x/api/v4/jobs?private_token=${REDACTED}&page=2`,
    ],
    ['a password in a URL', 'redis://:hunter2@redis.internal:6379/0', `redis://:${REDACTED}@redis.internal:6379/0`],
    ['a runner registration token', 'register with GR1348941aBcDeFgHiJkLmNoP now', `register with ${REDACTED} now`],
  ])('masks %s', (_what, text, expected) => {
    expect(redactor.redactText(text)).toBe(expected);
  });

  it('masks a private key block, PEM or OpenSSH, even when cut off', () => {
    const openssh =
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----';
    expect(redactor.redactText(`wrote ${openssh} to disk`)).toBe(`wrote [${REDACTED} OPENSSH PRIVATE KEY] to disk`);
    expect(redactor.redactText('-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI')).toBe(`[${REDACTED} PRIVATE KEY]`);
    expect(redactor.redact({ privateKey: 'anything' })).toEqual({ privateKey: REDACTED });
  });

  it('leaves ordinary text alone', () => {
    const text =
      'job 812 failed with "connection reset", retry 1 of 2 (https://gitlab.example.com/acme/api/-/jobs/812)';
    expect(redactor.redactText(text)).toBe(text);
  });

  it('walks objects, arrays and errors without changing the originals', () => {
    const error = new Error(`request failed for ${CONFIGURED_TOKEN}`);
    const input = { headers: { 'PRIVATE-TOKEN': 'short', accept: 'json' }, list: [FORGE_TOKEN], error, token: 'abc' };
    const output = redactor.redact(input) as {
      headers: unknown;
      list: unknown;
      token: unknown;
      error: { message: string; stack: string };
    };
    expect(output.headers).toEqual({ 'PRIVATE-TOKEN': REDACTED, accept: 'json' });
    expect(output.list).toEqual([`glpat-${REDACTED}`]);
    expect(output.token).toBe(REDACTED);
    expect(output.error.message).toBe(`request failed for ${REDACTED}`);
    expect(output.error.stack).not.toContain(CONFIGURED_TOKEN);
    expect(input.headers['PRIVATE-TOKEN']).toBe('short');
    expect(error.message).toContain(CONFIGURED_TOKEN);
  });

  it('masks every value under a secret-named key, whatever it looks like', () => {
    const input = {
      password: 'correct-horse',
      Secret: 'battery-staple',
      cookie: 'session=abc',
      'set-cookie': 'id=1',
      access_token: 'x1',
      private_key: 'k',
      empty: '',
    };
    expect(redactor.redact(input)).toEqual({
      password: REDACTED,
      Secret: REDACTED,
      cookie: REDACTED,
      'set-cookie': REDACTED,
      access_token: REDACTED,
      private_key: REDACTED,
      empty: '',
    });
  });

  it("masks an error's own fields and its cause, as an ApiError carries the forge's answer in `body`", () => {
    const cause = Object.assign(new Error(`connect failed for ${CONFIGURED_TOKEN}`), { password: 'from-the-cause' });
    const error = Object.assign(new Error('request failed', { cause }), {
      body: { message: `echoed ${FORGE_TOKEN}` },
      token: 'own-field-token',
    });
    const output = JSON.stringify(redactor.redact(error));
    for (const secret of [CONFIGURED_TOKEN, 'Ab3dEf6hIj9kLm2nOp5q', 'from-the-cause', 'own-field-token'])
      expect(output).not.toContain(secret);
    expect(output).toContain(`echoed glpat-${REDACTED}`);
    expect(output).toContain(`connect failed for ${REDACTED}`);
  });

  it('survives cycles', () => {
    const cyclic: Record<string, unknown> = { name: 'a' };
    cyclic.self = cyclic;
    expect(redactor.redact(cyclic)).toEqual({ name: 'a', self: '[Circular]' });
  });
});

describe('AppLogger', () => {
  function capture(format: 'json' | 'pretty', level = 'verbose') {
    const stream = new MemoryStream();
    const logger = new AppLogger({ level, format, stream, redactor: redactorWithToken() });
    return { stream, logger };
  }

  it.each(['json', 'pretty'] as const)(
    'never prints a token, at any level, in messages, errors or stacks (%s)',
    async (format) => {
      const { stream, logger } = capture(format);
      const error = new Error(`GET /projects failed: PRIVATE-TOKEN: ${CONFIGURED_TOKEN}`);
      error.stack = `Error: boom ${FORGE_TOKEN}\n    at fetch (https://x/api?private_token=${CONFIGURED_TOKEN})`;
      logger.verbose(`verbose ${CONFIGURED_TOKEN}`, 'Ctx');
      logger.debug(`debug ${FORGE_TOKEN}`, 'Ctx');
      logger.log(`info ${CONFIGURED_TOKEN}`, 'Ctx');
      logger.warn({ message: 'warn', headers: { Authorization: `Bearer ${CONFIGURED_TOKEN}` } }, 'Ctx');
      logger.error(`error ${CONFIGURED_TOKEN}`, error.stack, 'Ctx');
      logger.error(error, 'Ctx');
      logger.fatal(`fatal ${FORGE_TOKEN}`, 'Ctx');
      await logger.flush();
      const text = stream.text;
      expect(text).not.toContain(CONFIGURED_TOKEN);
      expect(text).not.toContain('Ab3dEf6hIj9kLm2nOp5q');
      for (const level of format === 'json'
        ? ['verbose', 'debug', 'info', 'warn', 'error', 'fatal']
        : ['VERBOSE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']) {
        expect(text).toContain(level);
      }
      expect(text.split(REDACTED).length - 1).toBeGreaterThanOrEqual(9);
    },
  );

  // The two passes each catch what the other cannot: a secret-named field holds a value no pattern knows, and a key
  // (never a value) can hold a configured secret.
  it.each(['json', 'pretty'] as const)(
    'masks a secret-named field and a configured secret used as a key (%s)',
    async (format) => {
      const { stream, logger } = capture(format);
      logger.warn({ message: 'login', password: 'correct-horse', seen: { [CONFIGURED_TOKEN]: true } }, 'Ctx');
      await logger.flush();
      expect(stream.text).toContain('login');
      expect(stream.text).not.toContain('correct-horse');
      expect(stream.text).not.toContain(CONFIGURED_TOKEN);
    },
  );

  it('writes JSON lines with level, context, message and error stack', async () => {
    const { stream, logger } = capture('json');
    const error = new TypeError('bad answer');
    logger.log('started', 'Bootstrap');
    logger.error('poll failed', error.stack, 'JobRetry');
    logger.warn({ message: 'slow', policy: 'nightly', ms: 1200 }, 'Engine');
    await logger.flush();
    const [started, failed, slow] = stream.lines;
    expect(started).toMatchObject({ level: 'info', context: 'Bootstrap', message: 'started' });
    expect(typeof started?.timestamp).toBe('string');
    expect(failed).toMatchObject({ level: 'error', context: 'JobRetry', message: 'poll failed' });
    expect(String(failed?.stack)).toMatch(/^TypeError: bad answer\n\s+at /);
    expect(slow).toMatchObject({ level: 'warn', context: 'Engine', message: 'slow', policy: 'nightly', ms: 1200 });
  });

  it.each([
    ['info', false],
    ['warn', false],
    ['debug', true],
    ['verbose', true],
  ] as const)('at %s, keeps error stacks: %s (the message always)', async (level, kept) => {
    const { stream, logger } = capture('json', level);
    const error = new TypeError('bad answer');
    logger.error('poll failed', error.stack, 'JobRetry');
    logger.error(error, 'JobRetry');
    await logger.flush();
    const [withStack, withError] = stream.lines;
    expect(withStack).toMatchObject({ level: 'error', message: 'poll failed' });
    expect(withError).toMatchObject({ level: 'error', message: 'bad answer' });
    expect(stream.text.includes('    at ')).toBe(kept);
    if (!kept) expect(withError?.error).toBe('TypeError: bad answer');
  });

  it('drops entries below LOG_LEVEL', async () => {
    const { stream, logger } = capture('json', 'warn');
    logger.debug('hidden', 'Ctx');
    logger.log('hidden', 'Ctx');
    logger.warn('shown', 'Ctx');
    await logger.flush();
    expect(stream.lines.map((line) => line.message)).toEqual(['shown']);
  });

  it('serves Nest Logger instances with their class as context', async () => {
    const { stream, logger } = capture('json');
    Logger.overrideLogger(logger);
    new Logger('QueueService').warn(`lost ${FORGE_TOKEN}`);
    Logger.overrideLogger(false);
    await logger.flush();
    expect(stream.lines).toEqual([
      expect.objectContaining({ level: 'warn', context: 'QueueService', message: `lost glpat-${REDACTED}` }),
    ]);
  });

  it('rejects an unknown LOG_LEVEL with the accepted ones', () => {
    expect(parseLogLevel('log')).toBe('info');
    expect(parseLogLevel('DEBUG')).toBe('debug');
    expect(() => parseLogLevel('loud')).toThrow(
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, verbose (got "loud")',
    );
  });
});
