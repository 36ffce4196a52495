import { daysLeft, expirySeconds, expiryVerdict } from './token-expiry';

describe('the daemon token’s expiry', () => {
  const now = Date.parse('2025-06-02T12:00:00Z');

  it('ends at 00:00 UTC of the expiry day', () => {
    expect(expirySeconds('2025-07-01')).toBe(Date.parse('2025-07-01T00:00:00Z') / 1000);
    expect(daysLeft('2025-07-01', now)).toBe(28);
  });

  it.each([
    ['2025-09-01', 'ok', 'expires on 2025-09-01, in 90 days'],
    ['2025-07-03', 'ok', 'expires on 2025-07-03, in 30 days'],
    ['2025-07-02', 'warning', 'expires on 2025-07-02, in 29 days: rotate it before it lapses'],
    ['2025-06-10', 'warning', 'expires on 2025-06-10, in 7 days: rotate it before it lapses'],
    ['2025-06-09', 'failure', 'expires on 2025-06-09, in 6 days: rotate it now, or the daemon stops'],
    ['2025-06-02', 'failure', 'expired on 2025-06-02: rotate it now, or the daemon stops'],
  ])('%s: %s', (date, level, words) => {
    expect(expiryVerdict({ state: 'expires', date }, now)).toEqual({ level, words });
  });

  it('says a token that never expires is fine, and one whose expiry cannot be read is to be watched', () => {
    expect(expiryVerdict({ state: 'never' }, now)).toEqual({ level: 'ok', words: 'does not expire' });
    expect(
      expiryVerdict({ state: 'unknown', reason: 'GET /personal_access_tokens/self answered 404: …' }, now),
    ).toEqual({
      level: 'warning',
      words: 'its expiry cannot be read (GET /personal_access_tokens/self answered 404: …); watch it yourself',
    });
  });
});
