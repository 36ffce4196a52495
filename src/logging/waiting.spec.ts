import { delayLine, gaveUpAfter, waitingLine } from './waiting';

describe('how a wait is said', () => {
  const at = new Date(2026, 10, 29, 14, 3, 7).getTime();

  it('at its start: what it waits for, why, and until when in local time', () => {
    expect(
      waitingLine(
        'Redis at redis://127.0.0.1:6379 (REDIS_URL)',
        'connection refused (ECONNREFUSED)',
        at,
        'redis.connect_timeout 10s',
      ),
    ).toBe(
      'waiting for Redis at redis://127.0.0.1:6379 (REDIS_URL): connection refused (ECONNREFUSED); trying again until 14:03:07 at the latest (redis.connect_timeout 10s)',
    );
    expect(delayLine('retry acme/api job 12', "the policy's delay", 29_600, at)).toBe(
      "retry acme/api job 12: waiting 30s (the policy's delay), until 14:03:07",
    );
  });

  it('at its end: the time waited, to a tenth of a second, beside the bound', () => {
    expect(gaveUpAfter(21_649, 'gitlab.start_timeout 30s')).toBe('gave up after 21.6s (gitlab.start_timeout 30s)');
    expect(gaveUpAfter(-3, 'x')).toBe('gave up after 0.0s (x)');
  });
});
