import { formatDuration, parseDuration } from './duration';
import { Re2Pattern } from './re2';
import { byteSize, cron, duration, groupRef, period, projectRef, re2, timezone } from './validators';

describe('durations', () => {
  it.each([
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['14d', 14 * 86_400_000],
    ['2w', 14 * 86_400_000],
    ['1month', 30 * 86_400_000],
    ['3months', 90 * 86_400_000],
    ['0s', 0],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
    expect(duration().parse(text)).toBe(ms);
  });

  it.each(['30', '5 minutes', '1.5h', '-1h', 'h', '2y', '', '1mo'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
    const result = duration().safeParse(text);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/expected a duration such as 30s/);
  });

  it('rejects a number that is not a string', () => {
    expect(duration().safeParse(30).success).toBe(false);
  });

  it('says a duration too large for milliseconds is too large, quoting only its start', () => {
    const result = duration().safeParse(`${'9'.repeat(500)}w`);
    expect(result.error?.issues[0]?.message).toBe(
      `expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month; "${'9'.repeat(60)}… (441 more characters)" is too large`,
    );
  });

  it.each([
    ['0s', 'must be at least 1s, got 0s'],
    [' 0m ', 'must be at least 1s, got 0m'],
    ['500ms', 'must be at least 1s, got 500ms'],
    ['0ms', 'must be at least 1s, got 0ms'],
  ])('a period refuses %j', (text, message) => {
    const result = period().safeParse(text);
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.message)).toEqual([message]);
  });

  it('a period takes 1s and more, and refuses milliseconds it cannot say are too short as a mere bad form', () => {
    expect(period().parse('1s')).toBe(1_000);
    expect(period().parse('5m')).toBe(300_000);
    expect(period().safeParse('1500ms').error?.issues[0]?.message).toMatch(/^expected a duration such as 30s/);
  });

  it('a plain duration may be zero and says nothing of milliseconds', () => {
    expect(duration().parse('0s')).toBe(0);
    expect(duration().safeParse('500ms').error?.issues[0]?.message).toMatch(/^expected a duration such as 30s/);
  });

  it('formats back to the largest exact unit', () => {
    expect(formatDuration(90_000)).toBe('90s');
    expect(formatDuration(7_200_000)).toBe('2h');
    expect(formatDuration(14 * 86_400_000)).toBe('2w');
    expect(formatDuration(1500)).toBe('1500ms');
  });
});

describe('RE2 expressions', () => {
  it('compiles RE2 with flags, matching unanchored', () => {
    const pattern = re2().parse('(?i)connection reset');
    expect(pattern).toBeInstanceOf(Re2Pattern);
    expect(pattern.test('error: Connection Reset by peer')).toBe(true);
    expect(pattern.test('connection refused')).toBe(false);
    expect(pattern.source).toBe('(?i)connection reset');
  });

  it.each([
    ['(?<=a)b', 'RE2 does not support look-behind `(?<=`'],
    ['x(?<!a)b', 'RE2 does not support negative look-behind `(?<!`'],
    ['foo(?=bar)', 'RE2 does not support look-ahead `(?=`'],
    ['foo(?!bar)', 'RE2 does not support negative look-ahead `(?!`'],
    ['(a)\\1', 'RE2 does not support back-references `\\1`'],
    ['(?<n>a)\\k<n>', 'RE2 does not support named back-references `\\k<name>`'],
    ['(?>ab)c', 'RE2 does not support atomic groups `(?>`'],
    ['a++', 'RE2 does not support possessive quantifiers `++`'],
    ['a{2}+', 'RE2 does not support possessive quantifiers `{2}+`'],
    // Mistakes of any dialect keep re2js's own words.
    ['(abc', 'missing closing ): `(abc`'],
    ['a**', 'invalid nested repetition operator: `**`'],
  ])('names what RE2 does not support in %j', (source, reason) => {
    const result = re2().safeParse(source);
    expect(result.error?.issues[0]?.message).toBe(`invalid RE2 regular expression: ${reason}`);
  });

  it.each([
    ['unbalanced group', '(abc'],
    ['bad repetition', '*x'],
  ])('rejects a %s', (_what, source) => {
    const result = re2().safeParse(source);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/^invalid RE2 regular expression: /);
  });
});

describe('cron expressions', () => {
  it.each(['0 3 * * *', '*/15 * * * 1-5', '@daily', '0 0 1 1 *'])('accepts %j', (expression) => {
    expect(cron().safeParse(expression).success).toBe(true);
  });

  it.each([
    ['0 3 * *', /5 fields.*got 4/],
    ['0 0 3 * * *', /5 fields.*got 6/],
    ['61 * * * *', /invalid cron expression/],
    ['* * * 13 *', /invalid cron expression/],
  ])('rejects %j', (expression, message) => {
    const result = cron().safeParse(expression);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(message);
  });

  it('checks time zones against the IANA database', () => {
    expect(timezone().safeParse('Europe/Berlin').success).toBe(true);
    expect(timezone().safeParse('UTC').success).toBe(true);
    const result = timezone().safeParse('Mars/Olympus');
    expect(result.error?.issues[0]?.message).toBe(
      'unknown time zone "Mars/Olympus"; expected an IANA name such as "Europe/Berlin"',
    );
  });
});

describe('project and group references', () => {
  it('takes ids and full paths', () => {
    expect(projectRef().parse(42)).toBe(42);
    expect(projectRef().parse('42')).toBe(42);
    expect(projectRef().parse('acme/api')).toBe('acme/api');
    expect(projectRef().parse('acme/platform/api.v2')).toBe('acme/platform/api.v2');
    expect(groupRef().parse('acme')).toBe('acme');
    expect(groupRef().parse('acme/platform')).toBe('acme/platform');
    expect(groupRef().parse(7)).toBe(7);
  });

  it.each([0, -3, 1.5, 'api', 'acme/', '/acme/api', 'acme//api', 'acme/-api', true])('rejects project %j', (value) => {
    const result = projectRef().safeParse(value);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/project id|positive whole number/);
  });

  it.each(['', 'acme/', 'a b', -1])('rejects group %j', (value) => {
    expect(groupRef().safeParse(value).success).toBe(false);
  });
});

describe('byte sizes', () => {
  it.each([
    [65536, 65536],
    ['64KiB', 65536],
    ['1MiB', 1048576],
    ['500KB', 500000],
    ['10B', 10],
  ])('%j is %d bytes', (value, bytes) => {
    expect(byteSize().parse(value)).toBe(bytes);
  });

  it.each([0, -5, 1.5, '64kb', '1 megabyte', ''])('rejects %j', (value) => {
    const result = byteSize().safeParse(value);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('expected a size such as 65536, 64KiB or 1MiB');
  });
});
