import { FaultRules } from './faults';

const NOW = 1_750_000_000;

describe('FaultRules', () => {
  it('follows a sequence, then lets requests pass', () => {
    const faults = new FaultRules();
    faults.add({ path: '^/api/v4/projects', sequence: [503, 503, 'pass', 'reset'] });
    const kinds = Array.from({ length: 5 }, () => {
      const d = faults.decide('GET', '/api/v4/projects/1/jobs', NOW);
      return d.kind === 'answer' ? d.status : d.kind;
    });
    expect(kinds).toEqual([503, 503, 'pass', 'reset', 'pass']);
  });

  it('scopes rules by method and path', () => {
    const faults = new FaultRules();
    faults.add({ method: 'DELETE', path: '/tags$', status: 500 });
    expect(faults.decide('GET', '/api/v4/x/tags', NOW).kind).toBe('pass');
    expect(faults.decide('DELETE', '/api/v4/x/jobs', NOW).kind).toBe('pass');
    expect(faults.decide('DELETE', '/api/v4/x/tags', NOW)).toMatchObject({ kind: 'answer', status: 500 });
  });

  it('fires `times` times only', () => {
    const faults = new FaultRules();
    faults.add({ status: 429, retry_after: 7, times: 2 });
    const answers = Array.from({ length: 3 }, () => faults.decide('GET', '/api/v4/user', NOW));
    expect(answers.map((a) => a.kind)).toEqual(['answer', 'answer', 'pass']);
    expect(answers[0]).toMatchObject({ status: 429, retryAfter: 7 });
  });

  it('uses the probability against its random source', () => {
    const draws = [0.1, 0.9];
    const faults = new FaultRules(() => draws.shift() ?? 1);
    faults.add({ status: 502, probability: 0.5 });
    expect(faults.decide('GET', '/a', NOW).kind).toBe('answer');
    expect(faults.decide('GET', '/a', NOW).kind).toBe('pass');
  });

  it('adds latency of every matching latency rule and computes RateLimit-Reset from the clock', () => {
    const faults = new FaultRules();
    faults.add({ latency_ms: 20 });
    faults.add({ latency_ms: 30, status: 429, ratelimit_reset_in: 60 });
    expect(faults.decide('GET', '/a', NOW)).toMatchObject({
      kind: 'answer',
      latencyMs: 50,
      status: 429,
      retryAfter: undefined,
      rateLimitReset: NOW + 60,
    });
  });

  it('says when a fault answers after the forge acted', () => {
    const faults = new FaultRules();
    faults.add({ method: 'POST', status: 502, after: true, times: 1 });
    faults.add({ method: 'DELETE', sequence: [{ reset: true, after: true }, 'reset'] });
    expect(faults.decide('POST', '/a', NOW)).toMatchObject({ kind: 'answer', status: 502, after: true });
    expect(faults.decide('POST', '/a', NOW).kind).toBe('pass');
    expect(faults.decide('DELETE', '/a', NOW)).toMatchObject({ kind: 'reset', after: true });
    expect(faults.decide('DELETE', '/a', NOW)).toMatchObject({ kind: 'reset', after: false });
    expect(faults.decide('GET', '/a', NOW).kind).toBe('pass');
  });

  it('answers before the forge acts unless told otherwise', () => {
    const faults = new FaultRules();
    faults.add({ status: 503 });
    expect(faults.decide('GET', '/a', NOW)).toMatchObject({ kind: 'answer', status: 503, after: false });
  });

  it('rejects `after` without a status or reset to answer with', () => {
    expect(() => new FaultRules().add({ after: true })).toThrow(/after: true needs a status or reset/);
    expect(() => new FaultRules().add({ after: true, latency_ms: 10 })).toThrow();
    expect(() => new FaultRules().add({ sequence: [{ after: true }] })).toThrow();
  });

  it('rejects an invalid path regex', () => {
    expect(() => new FaultRules().add({ path: '(' })).toThrow();
  });
});
