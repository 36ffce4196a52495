import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { childEnv, runCli, writeTempFile } from '../support/cli';

/**
 * `forgewarden validate`, run as built, on policy files written to break it (test/fixtures/hostile/, each saying in
 * its first comment what it tries). Whatever a file holds, the answer is exit 2 with each problem as
 * `FILE:LINE:COL key.path: message`, or exit 0 for a file that is valid (with located warnings, if any): never a stack
 * trace, never a crash, never a hang (each run must end within the test's timeout).
 */
const HOSTILE = resolve(__dirname, '../fixtures/hostile');

type Outcome = 'invalid' | 'warning' | 'valid';

interface Case {
  readonly outcome: Outcome;
  /** Turns the fixture into the file that is checked, for what is too large to keep in the repository. */
  readonly expand?: (text: string) => string;
  /** Exactly the lines of stderr, `FILE` standing for the checked file's path. */
  readonly stderr?: readonly string[];
  /** Each line of stderr (problems, then the count) matches the pattern of the same index. */
  readonly matches?: readonly RegExp[];
}

const VERSION = 'expected version: 1 (the only version of the policy file so far)';
const REFERENCE_FORMS = 'write ${NAME} or ${NAME:-default} (a name is letters, digits and _), or $${ for a literal ${';

const CASES: Record<string, Case> = {
  'alias-bomb.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:8:14 lol2[0]: aliases here expand to more than 1000 copies (nested aliases grow exponentially); write the values out instead',
      'FILE: 1 problem',
    ],
  },
  'alias-circular.yml': { outcome: 'invalid' },
  'bom.yml': { outcome: 'invalid', stderr: [`FILE:2:10 version: ${VERSION}`, 'FILE: 1 problem'] },
  'bom-valid.yml': { outcome: 'valid' },
  'control-character.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:5:16 (file): control character U+0001 is not allowed in YAML; remove it, or write it as an escape in a double-quoted string',
      'FILE: 1 problem',
    ],
  },
  'crlf.yml': {
    outcome: 'invalid',
    stderr: ['FILE:6:12 gitlab.timeout: expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month', 'FILE: 1 problem'],
  },
  'crlf-valid.yml': { outcome: 'valid' },
  'cron-six-fields.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:9:15 policies[0].schedule: expected a cron expression with 5 fields (minute hour day-of-month month day-of-week), got 6',
      'FILE: 1 problem',
    ],
  },
  'deep-nesting.yml': {
    outcome: 'invalid',
    stderr: ['FILE:6:71 (syntax): nested more than 64 levels deep', 'FILE: 1 problem'],
  },
  // Where the parser runs out of stack depends on the machine; that it says so, once, does not.
  'deep-nesting-parser.yml': {
    outcome: 'invalid',
    matches: [/^FILE:6:\d+ \(syntax\): nested too deeply to parse \(at most 64 levels\)$/, /^FILE: 1 problem$/],
  },
  'duplicate-keys.yml': {
    outcome: 'invalid',
    stderr: ['FILE:7:1 (syntax): Map keys must be unique', 'FILE: 1 problem'],
  },
  'duplicate-policy-names.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:8:13 policies[1].name: duplicate policy name "retry" (policies[0] has it already)',
      'FILE: 1 problem',
    ],
  },
  'empty.yml': {
    outcome: 'invalid',
    stderr: ['FILE:1:1 (root): expected a mapping with version, gitlab and policies', 'FILE: 1 problem'],
  },
  'env-invalid-name.yml': { outcome: 'invalid' },
  'env-missing.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:5:10 gitlab.token: environment variable FORGEWARDEN_HOSTILE_UNSET_TOKEN is not set (write ${FORGEWARDEN_HOSTILE_UNSET_TOKEN:-default} to give a default)',
      'FILE: 1 problem',
    ],
  },
  'env-unclosed-many.yml': {
    outcome: 'invalid',
    expand: (text) => text.replace('MANY', '${A:-'.repeat(200_000)),
    stderr: [
      `FILE:6:10 gitlab.token: "\${A:-\${A:-\${A:-\${A:-\${A:-\${A:-\${A:-\${A:-…" is not closed with "}"; ${REFERENCE_FORMS}`,
      'FILE: 1 problem',
    ],
  },
  'env-unterminated.yml': {
    outcome: 'invalid',
    stderr: [`FILE:5:10 gitlab.token: "\${GITLAB_TOKEN" is not closed with "}"; ${REFERENCE_FORMS}`, 'FILE: 1 problem'],
  },
  'http-loopback.yml': { outcome: 'valid' },
  'http-non-loopback.yml': {
    outcome: 'warning',
    stderr: [
      'FILE:5:8 gitlab.url: warning: http:// to gitlab.example.com sends the token unencrypted over the network; use https:// (plain http:// is for this machine only)',
    ],
  },
  'huge-numbers.yml': { outcome: 'invalid' },
  'huge-string.yml': {
    outcome: 'invalid',
    expand: (text) => text.replace('HUGE', 'x'.repeat(10 * 1024 * 1024)),
    stderr: ['FILE:1:1 (file): the policy file is larger than 1 MiB; is this the right file?', 'FILE: 1 problem'],
  },
  'interval-500ms.yml': {
    outcome: 'invalid',
    stderr: ['FILE:9:15 policies[0].interval: must be at least 1s, got 500ms', 'FILE: 1 problem'],
  },
  'interval-zero.yml': {
    outcome: 'invalid',
    stderr: ['FILE:10:15 policies[0].interval: must be at least 1s, got 0s', 'FILE: 1 problem'],
  },
  'list.yml': {
    outcome: 'invalid',
    stderr: ['FILE:2:1 (root): expected a mapping with version, gitlab and policies', 'FILE: 1 problem'],
  },
  'long-value.yml': {
    outcome: 'invalid',
    expand: (text) => text.replaceAll('LONG', 'y'.repeat(200_000)),
    matches: [
      /^FILE:9:11 policies\[0\]\.name: a policy name is 1 to 63 letters, digits, "\.", "_" or "-", starting with a letter or digit$/,
      /^FILE:12:15 policies\[0\]\.timezone: unknown time zone "y{60}… \(199940 more characters\)"; expected an IANA name such as "Europe\/Berlin"$/,
      /^FILE:14:24 policies\[0\]\.name_regex_delete: invalid RE2 regular expression: missing closing \): `\(y+… \(\d+ more characters\)$/,
      /^FILE:15:7 policies\[0\]\.y{60}…: unknown key "y{60}… \(199940 more characters\)"; known keys: name, /,
      /^FILE: 4 problems$/,
    ],
  },
  'merge-key.yml': {
    outcome: 'invalid',
    stderr: ['FILE:13:5 policies[1].<<: merge keys (<<) are not supported; write the keys out', 'FILE: 1 problem'],
  },
  'multiple-documents.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:6:1 (syntax): the file holds more than one YAML document (a second "---"); a policy file is one document',
      'FILE: 1 problem',
    ],
  },
  'nan-inf.yml': { outcome: 'invalid' },
  'negative-numbers.yml': { outcome: 'invalid' },
  'non-utf8.yml': {
    outcome: 'invalid',
    stderr: ['FILE:5:19 (file): byte 0xE9 is not UTF-8; save the policy file as UTF-8', 'FILE: 1 problem'],
  },
  'nulls.yml': { outcome: 'invalid' },
  'proto-key.yml': { outcome: 'invalid' },
  're2-backreference.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:11:24 policies[0].name_regex_delete: invalid RE2 regular expression: RE2 does not support back-references `\\1`',
      'FILE: 1 problem',
    ],
  },
  're2-catastrophic.yml': { outcome: 'valid' },
  're2-huge-repeat.yml': { outcome: 'invalid' },
  're2-lookahead.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:12:19 policies[0].match.job_names[0]: invalid RE2 regular expression: RE2 does not support look-ahead `(?=`',
      'FILE: 1 problem',
    ],
  },
  'rotate-after-zero.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:9:15 policies[0].interval: must be at least 1s, got 0s',
      'FILE:12:69 policies[0].deploy_keys[0].rotate_after: must be at least 1s, got 0s',
      'FILE: 2 problems',
    ],
  },
  'scalar.yml': {
    outcome: 'invalid',
    stderr: ['FILE:2:1 (root): expected a mapping with version, gitlab and policies', 'FILE: 1 problem'],
  },
  'secrets-dir-relative.yml': { outcome: 'valid' },
  'tabs.yml': {
    outcome: 'invalid',
    stderr: ['FILE:5:1 (syntax): Tabs are not allowed as indentation', 'FILE: 1 problem'],
  },
  'timeout-zero.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:6:12 gitlab.timeout: must be at least 1s, got 0s',
      'FILE:7:20 gitlab.connect_timeout: must be at least 1s, got 0s',
      'FILE: 2 problems',
    ],
  },
  'type-not-a-string.yml': { outcome: 'invalid' },
  'unknown-keys.yml': { outcome: 'invalid' },
  'unknown-tags.yml': { outcome: 'invalid' },
  'unknown-timezone.yml': {
    outcome: 'invalid',
    stderr: [
      'FILE:10:15 policies[0].timezone: unknown time zone "Mars/Olympus_Mons"; expected an IANA name such as "Europe/Berlin"',
      'FILE: 1 problem',
    ],
  },
  'wrong-types-everywhere.yml': { outcome: 'invalid' },
  'wrong-types-in-policies.yml': { outcome: 'invalid' },
};

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('the hostile fixtures', () => {
  const files = readdirSync(HOSTILE)
    .filter((name) => name.endsWith('.yml'))
    .sort();

  it('are many, each has a case here, and each says what it tries', () => {
    expect(files.length).toBeGreaterThanOrEqual(31);
    expect(files).toEqual(Object.keys(CASES).sort());
    for (const name of files) {
      expect([
        name,
        readFileSync(join(HOSTILE, name), 'latin1')
          .replace(/^\xEF\xBB\xBF/, '')
          .startsWith('# Tries: '),
      ]).toEqual([name, true]);
    }
  });
});

describe('forgewarden validate on a hostile file', () => {
  it.each(Object.entries(CASES))('%s', async (name, hostile) => {
    const fixture = join(HOSTILE, name);
    const file = hostile.expand ? writeTempFile(name, hostile.expand(readFileSync(fixture, 'utf8'))) : fixture;
    const env = childEnv();
    delete env.FORGEWARDEN_HOSTILE_UNSET_TOKEN;

    const result = await runCli(['validate', '-c', file], env);

    // Ended by itself (not killed at the timeout), without a stack trace, and without echoing a huge value back.
    expect(result.signal).toBeNull();
    expect(result.stderr).not.toMatch(/^ {4}at /m);
    expect(result.stderr).not.toContain('TypeError');
    expect(result.stderr.length).toBeLessThan(10_000);
    const lines = result.stderr.trimEnd().split('\n').filter(Boolean);
    const at = `^${escapeRegExp(file)}:\\d+:\\d+ \\S+: `;

    if (hostile.outcome === 'invalid') {
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(lines.length).toBeGreaterThanOrEqual(2);
      for (const line of lines.slice(0, -1)) expect(line).toMatch(new RegExp(at));
      expect(lines.at(-1)).toMatch(new RegExp(`^${escapeRegExp(file)}: \\d+ problems?$`));
    } else if (hostile.outcome === 'warning') {
      expect(result.code).toBe(0);
      expect(lines.length).toBeGreaterThanOrEqual(1);
      for (const line of lines) expect(line).toMatch(new RegExp(`${at}warning: `));
      expect(result.stdout).toMatch(/: valid, \d+ polic(y|ies), \d+ warnings?\n$/);
    } else {
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(/: valid, \d+ polic(y|ies)\n$/);
    }

    if (hostile.stderr) expect(lines).toEqual(hostile.stderr.map((line) => line.replaceAll('FILE', file)));
    if (hostile.matches) {
      expect(lines).toHaveLength(hostile.matches.length);
      hostile.matches.forEach((pattern, index) => {
        expect(lines[index]).toMatch(new RegExp(pattern.source.replaceAll('FILE', escapeRegExp(file))));
      });
    }
  });

  it('says a file of zero bytes is no mapping', async () => {
    const file = writeTempFile('zero.yml', '');
    const result = await runCli(['validate', '-c', file], childEnv());
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `${file}:1:1 (root): expected a mapping with version, gitlab and policies\n${file}: 1 problem\n`,
    );
  });

  it('refuses to read an endless device whole', async () => {
    const result = await runCli(['validate', '-c', '/dev/zero'], childEnv());
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      '/dev/zero:1:1 (file): the policy file is larger than 1 MiB; is this the right file?\n/dev/zero: 1 problem\n',
    );
  });
});
