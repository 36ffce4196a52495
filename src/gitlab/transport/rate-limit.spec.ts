import { FakeClock } from '../../../test/support/gitlab/fake-clock';
import { MockForge, OPEN_LIMITER } from '../../../test/support/gitlab/mock-forge';
import { LimiterClosedError, RateLimiter, writeSpacingMs } from './rate-limit';

const base = OPEN_LIMITER;

describe('rate-limit layer', () => {
  it('caps the requests in flight per process', async () => {
    const limiter = new RateLimiter({ ...base, concurrency: 2 }, new FakeClock());
    let inFlight = 0;
    let peak = 0;
    const gates: Array<() => void> = [];
    const done = Promise.all(
      Array.from({ length: 5 }, () =>
        limiter.schedule('GET', async () => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          await new Promise<void>((resolve) => gates.push(resolve));
          inFlight--;
        }),
      ),
    );
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(inFlight).toBe(2);
    while (gates.length) {
      gates.shift()?.();
      await settle();
      expect(inFlight).toBeLessThanOrEqual(2);
    }
    await done;
    expect(peak).toBe(2);
    expect(limiter.activeRequests).toBe(0);
  });

  it('on close, lets the request under way finish, starts none of those waiting, and resolves after the first', async () => {
    const limiter = new RateLimiter({ ...base, concurrency: 1 }, new FakeClock());
    let release: () => void = () => undefined;
    const started: number[] = [];
    const send = (id: number) => async () => {
      started.push(id);
      if (id === 1) await new Promise<void>((resolve) => (release = resolve));
      return id;
    };
    const outcomes = [1, 2].map((id) => limiter.schedule('GET', send(id)).catch((error: unknown) => error));
    await new Promise((resolve) => setImmediate(resolve));
    let closed = false;
    const closing = limiter.close().then(() => (closed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    release();
    await closing;
    expect(await outcomes[0]).toBe(1);
    expect(await outcomes[1]).toBeInstanceOf(LimiterClosedError);
    expect(started).toEqual([1]);
    await expect(limiter.schedule('GET', send(3))).rejects.toBeInstanceOf(LimiterClosedError);
  });

  it('spaces writes but not reads', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ ...base, minWriteIntervalMs: 1000 }, clock);
    const sent: Array<[string, number]> = [];
    const t0 = clock.now();
    await Promise.all([
      limiter.schedule('POST', async () => sent.push(['POST', clock.now() - t0])),
      limiter.schedule('DELETE', async () => sent.push(['DELETE', clock.now() - t0])),
      limiter.schedule('GET', async () => sent.push(['GET', clock.now() - t0])),
      limiter.schedule('PUT', async () => sent.push(['PUT', clock.now() - t0])),
    ]);
    expect(sent).toEqual([
      ['POST', 0],
      ['GET', 0],
      ['DELETE', 1000],
      ['PUT', 2000],
    ]);
  });

  it('spaces writes at the budget’s pace, at most 250 ms apart, unless told an interval', async () => {
    const spacing = (maxRequestsPerMinute: number, minWriteIntervalMs?: number) =>
      writeSpacingMs({
        maxRequestsPerMinute,
        windowMs: 60_000,
        ...(minWriteIntervalMs !== undefined ? { minWriteIntervalMs } : {}),
      });
    expect(spacing(600)).toBe(100);
    expect(spacing(6_000)).toBe(10);
    expect(spacing(100)).toBe(250);
    expect(spacing(0)).toBe(0);
    expect(spacing(600, 1000)).toBe(1000);

    const clock = new FakeClock();
    const { minWriteIntervalMs: _fixed, ...budgeted } = base;
    const limiter = new RateLimiter({ ...budgeted, maxRequestsPerMinute: 1_200, windowMs: 60_000 }, clock);
    expect(limiter.writeSpacingMs).toBe(50);
    const sent: number[] = [];
    const t0 = clock.now();
    await Promise.all(
      Array.from({ length: 4 }, () => limiter.schedule('POST', async () => sent.push(clock.now() - t0))),
    );
    expect(sent).toEqual([0, 50, 100, 150]);
  });

  describe('slowing down on the forge’s own counters', () => {
    it('spreads requests over the time to reset when RateLimit-Remaining runs low', async () => {
      const forge = new MockForge();
      const resetAt = Math.floor(forge.clock.now() / 1000) + 10;
      forge.pool
        .intercept({ path: '/api/v4/namespaces/1', method: 'GET' })
        .reply(
          200,
          { id: 1 },
          {
            headers: { 'ratelimit-limit': '100', 'ratelimit-remaining': '5', 'ratelimit-reset': String(resetAt) },
          },
        )
        .times(2);
      const client = forge.client();
      try {
        await client.namespaces.show(1);
        expect(forge.clock.sleeps).toEqual([]);
        await client.namespaces.show(1);
        expect(forge.clock.sleeps).toEqual([2000]); // 10 s left for 5 requests
      } finally {
        await client.close();
        await forge.close();
      }
    });

    it('does not slow down while plenty remains, and waits for the reset when nothing does', async () => {
      const clock = new FakeClock();
      const limiter = new RateLimiter(base, clock);
      const reset = String(Math.floor(clock.now() / 1000) + 30);
      limiter.observe(200, { 'ratelimit-limit': '100', 'ratelimit-remaining': '50', 'ratelimit-reset': reset });
      expect(limiter.slowDownMs()).toBe(0);
      limiter.observe(200, { 'ratelimit-limit': '100', 'ratelimit-remaining': '0', 'ratelimit-reset': reset });
      expect(limiter.slowDownMs()).toBe(30_000);
    });

    it('pauses every request after a 429 that said how long', async () => {
      const clock = new FakeClock();
      const limiter = new RateLimiter(base, clock);
      limiter.observe(429, { 'retry-after': '5' });
      await limiter.schedule('GET', async () => undefined);
      await limiter.schedule('GET', async () => undefined);
      expect(clock.sleeps).toEqual([5000]);
    });

    it('pauses no other request after one endpoint’s own 429 (JSON, without the throttle’s RateLimit headers)', async () => {
      const clock = new FakeClock();
      const limiter = new RateLimiter(base, clock);
      // The forge's answer to a second group export download within its limit.
      limiter.observe(429, { 'content-type': 'application/json', 'retry-after': '60' });
      await limiter.schedule('GET', async () => undefined);
      expect(clock.sleeps).toEqual([]);
      // The instance's throttle says it with its headers, whatever the body: everyone waits.
      limiter.observe(429, {
        'content-type': 'application/json',
        'retry-after': '7',
        'ratelimit-limit': '600',
        'ratelimit-remaining': '0',
      });
      await limiter.schedule('GET', async () => undefined);
      expect(clock.sleeps).toEqual([7000]);
    });
  });
});
