import { parseDuration } from './duration';

const H = 3600 * 1000;

describe('parseDuration', () => {
  it.each<[string, number | undefined]>([
    ['1h', H],
    ['90s', 90 * 1000],
    ['30m', 30 * 60 * 1000],
    ['1d', 24 * H],
    ['7d', 7 * 24 * H],
    ['2w', 14 * 24 * H],
    ['1month', 30 * 24 * H],
    ['2 months', 60 * 24 * H],
    ['1h 30m', 1.5 * H],
    ['1.5h', 1.5 * H],
    ['', undefined],
    ['soon', undefined],
    ['5', undefined],
    ['1fortnight', undefined],
  ])('%j → %s', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });
});
