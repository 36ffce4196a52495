import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { substitute } from './interpolate';
import { checkConfig, configWarnings, loadConfigFile, MAX_POLICY_FILE_BYTES, parseConfig } from './load';
import { definePolicyType } from './policy-type';
import { ConfigError, formatProblem } from './problems';
import { configJsonSchema } from './schema';
import { duration, re2List } from './validators';
import { tempDir } from '../../test/support/temp';

const exampleType = definePolicyType('example', 'A policy type used only by these tests.', {
  interval: duration(),
  patterns: re2List().optional(),
  limit: z.number().int().default(3),
});
const types = [exampleType];
const env = { GITLAB_TOKEN: 'glpat-from-environment-0000' };

/** The problems of a file as `validate` prints them. */
function problemsOf(text: string, options: { env?: NodeJS.ProcessEnv } = {}): string[] {
  try {
    parseConfig(text, 'policies.yml', { policyTypes: types, env: options.env ?? env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map(formatProblem);
    throw error;
  }
  throw new Error('expected the file to be invalid');
}

describe('loading a policy file', () => {
  it('applies defaults and converts durations', () => {
    const config = parseConfig(
      [
        'version: 1',
        'gitlab:',
        '  url: https://gitlab.example.com',
        'policies:',
        '  - { name: p1, type: example, interval: 5m }',
      ].join('\n'),
      'policies.yml',
      { policyTypes: types, env },
    );
    expect(config.dry_run).toBe(true);
    expect(config.gitlab).toEqual({
      url: 'https://gitlab.example.com',
      token: 'glpat-from-environment-0000',
      timeout: 30_000,
      connect_timeout: 10_000,
      max_requests_per_minute: 600,
      concurrency: 4,
    });
    expect(config.redis).toEqual({
      url: 'redis://127.0.0.1:6379',
      prefix: 'forgewarden',
      connect_timeout: 10_000,
      replica_ack_timeout: 1_000,
    });
    expect(config.http).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(config.shutdown_timeout).toBe(30_000);
    expect(config.policies).toEqual([{ name: 'p1', type: 'example', interval: 300_000, limit: 3 }]);
  });

  it('lists an unknown key, a bad duration, a duplicate name and an unknown type, each at its line', () => {
    const text = [
      'version: 1', //                                   1
      'gitlab:', //                                      2
      '  url: https://gitlab.example.com', //            3
      '  timeout: 5 minutes', //                         4
      '  max_request_per_minute: 100', //                5
      'policies:', //                                    6
      '  - name: nightly', //                            7
      '    type: example', //                            8
      '    interval: 1h', //                             9
      '  - name: nightly', //                           10
      '    type: exampel', //                           11
    ].join('\n');
    expect(problemsOf(text)).toEqual([
      'policies.yml:4:12 gitlab.timeout: expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month',
      'policies.yml:5:3 gitlab.max_request_per_minute: unknown key "max_request_per_minute"; did you mean "max_requests_per_minute"?',
      'policies.yml:10:11 policies[1].name: duplicate policy name "nightly" (policies[0] has it already)',
      'policies.yml:11:11 policies[1].type: unknown policy type "exampel"; known types: example',
    ]);
  });

  it('reports a duplicate name even when the entries have other problems', () => {
    const text = [
      'version: 1',
      'gitlab: { url: "https://gitlab.example.com" }',
      'policies:',
      '  - { name: twice, type: example }',
      '  - { name: twice, type: example, interval: 2h, extra: 1 }',
    ].join('\n');
    expect(problemsOf(text)).toEqual([
      'policies.yml:4:5 policies[0].interval: missing: expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month',
      'policies.yml:5:13 policies[1].name: duplicate policy name "twice" (policies[0] has it already)',
      'policies.yml:5:49 policies[1].extra: unknown key "extra"; known keys: name, dry_run, type, interval, patterns, limit',
    ]);
  });

  it('reports a duplicate policy name at the second one', () => {
    const text = [
      'version: 1',
      'gitlab: { url: "https://gitlab.example.com" }',
      'policies:',
      '  - { name: twice, type: example, interval: 1h }',
      '  - { name: twice, type: example, interval: 2h }',
    ].join('\n');
    expect(problemsOf(text)).toEqual([
      'policies.yml:5:13 policies[1].name: duplicate policy name "twice" (policies[0] has it already)',
    ]);
  });

  it('checks the fields of a known policy type, with hints for its keys', () => {
    const text = [
      'version: 1',
      'gitlab: { url: "https://gitlab.example.com" }',
      'policies:',
      '  - name: p',
      '    type: example',
      '    intervall: 1h',
      '    patterns: ["ok", "(?<=x)y"]',
    ].join('\n');
    expect(problemsOf(text)).toEqual([
      'policies.yml:4:5 policies[0].interval: missing: expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month',
      'policies.yml:6:5 policies[0].intervall: unknown key "intervall"; did you mean "interval"?',
      expect.stringMatching(/^policies\.yml:7:22 policies\[0\]\.patterns\[1\]: invalid RE2 regular expression: /),
    ]);
  });

  it('points a YAML syntax error at its line', () => {
    const problems = problemsOf(['version: 1', 'gitlab:', '  url: https://x: y', '  token: t'].join('\n'));
    expect(problems).toEqual([
      expect.stringMatching(/^policies\.yml:3:\d+ \(syntax\): Nested mappings are not allowed/),
    ]);
  });

  it('points an unclosed quote at the line that opens it', () => {
    const problems = problemsOf(
      ['version: 1', 'gitlab:', '  url: "https://x', '  token: t', 'dry_run: true'].join('\n'),
    );
    expect(problems).toEqual(['policies.yml:3:8 (syntax): this " is never closed: end the text with "']);
  });

  // The parser notices an unclosed bracket on a later line and then stumbles over what follows: three messages, none
  // of them where the mistake is.
  it.each([
    [
      '[',
      '    projects: [acme/api, acme/web',
      'policies.yml:5:15 (syntax): this [ is never closed: end the list with ]',
    ],
    ['{', '    match: { stages: [test]', 'policies.yml:5:12 (syntax): this { is never closed: end the mapping with }'],
    [
      '[ inside {',
      '    match: { stages: [test }',
      'policies.yml:5:22 (syntax): this [ is never closed: end the list with ]',
    ],
  ])('says an unclosed %s once, at the bracket', (_what, line, problem) => {
    const text = [
      'version: 1',
      'gitlab: { url: "https://x" }',
      'policies:',
      '  - name: p',
      line,
      '    interval: 1m',
      '    type: example',
      '',
    ].join('\n');
    expect(problemsOf(text)).toEqual([problem]);
  });

  it('says a stray closing bracket once, not every token after it', () => {
    const text = [
      'version: 1',
      'gitlab: { url: "https://x" }',
      'policies:',
      '  - { name: p, type: example, interval: 1m }]',
      'dry_run: true',
      'redis: { prefix: x }',
      '',
    ].join('\n');
    expect(problemsOf(text)).toEqual(['policies.yml:4:45 (syntax): this ] closes nothing: no [ is open here']);
  });

  it('still says each of two separate mistakes, one message each', () => {
    const text = [
      'version: 1',
      'gitlab: { url: "https://x" }',
      'policies:',
      '  - name: p',
      '    projects: [a, b',
      '    interval: 1m',
      '    type: example',
      'redis: { prefix: "x }',
      '',
    ].join('\n');
    expect(problemsOf(text)).toEqual([
      'policies.yml:5:15 (syntax): this [ is never closed: end the list with ]',
      'policies.yml:8:18 (syntax): this " is never closed: end the text with "',
    ]);
  });

  it('points a bad indentation at its line', () => {
    const problems = problemsOf(['version: 1', 'gitlab:', '  url: https://x', ' token: t'].join('\n'));
    expect(problems[0]).toMatch(/^policies\.yml:4:\d+ \(syntax\): /);
  });

  it('rejects duplicate keys in one mapping', () => {
    const problems = problemsOf(['version: 1', 'version: 1', 'gitlab: { url: "https://x" }'].join('\n'));
    expect(problems[0]).toMatch(/^policies\.yml:2:1 \(syntax\): Map keys must be unique/);
  });

  it('names a missing required section and a wrong version', () => {
    expect(problemsOf('version: 2\n', { env: {} })).toEqual([
      'policies.yml:1:1 gitlab: missing: this key is required',
      'policies.yml:1:10 version: expected version: 1 (the only version of the policy file so far)',
    ]);
  });

  it('rejects an empty file', () => {
    expect(problemsOf('')).toEqual(['policies.yml:1:1 (root): expected a mapping with version, gitlab and policies']);
  });

  describe('where Redis is: one server, sentinels or a cluster', () => {
    const withRedis = (...lines: string[]) =>
      ['version: 1', 'gitlab: { url: "https://x.example" }', 'redis:', ...lines].join('\n');

    it("takes sentinels with the primary's name, and then REDIS_URL does not stand in for a url", () => {
      const config = parseConfig(
        withRedis(
          '  sentinels: ["10.0.0.5:26379", "[::1]:26380"]',
          '  master_name: forge-redis',
          '  min_replicas_acked: 2',
        ),
        'policies.yml',
        {
          policyTypes: types,
          env: { ...env, REDIS_URL: 'redis://elsewhere:6379' },
        },
      );
      expect(config.redis).toEqual({
        sentinels: ['10.0.0.5:26379', '[::1]:26380'],
        master_name: 'forge-redis',
        min_replicas_acked: 2,
        prefix: 'forgewarden',
        connect_timeout: 10_000,
        replica_ack_timeout: 1_000,
      });
    });

    it('takes cluster nodes without a url', () => {
      const config = parseConfig(withRedis('  cluster: ["node-a:7000", "node-b:7000"]'), 'policies.yml', {
        policyTypes: types,
        env,
      });
      expect(config.redis.cluster).toEqual(['node-a:7000', 'node-b:7000']);
      expect(config.redis.url).toBeUndefined();
    });

    it('wants exactly one of url, sentinels and cluster, a primary name with sentinels, and host:port nodes, each at its line', () => {
      expect(problemsOf(withRedis('  url: redis://a:6379', '  cluster: ["b:7000"]'))).toEqual([
        'policies.yml:5:12 redis.cluster: give exactly one of redis.url, redis.sentinels and redis.cluster (this file gives redis.url and redis.cluster)',
      ]);
      expect(problemsOf(withRedis('  sentinels: ["a:26379"]'))).toEqual([
        'policies.yml:4:14 redis.sentinels: name the primary the sentinels monitor: add redis.master_name',
      ]);
      expect(problemsOf(withRedis('  master_name: forge-redis'))).toEqual([
        'policies.yml:4:16 redis.master_name: redis.master_name applies only with redis.sentinels',
      ]);
      expect(problemsOf(withRedis('  cluster: ["a:7000", "b"]'))).toEqual([
        'policies.yml:4:23 redis.cluster[1]: expected "host:port", such as "10.0.0.5:26379"',
      ]);
      expect(problemsOf(withRedis('  url: redis://a:6379', '  replica_ack_timeout: 0s'))).toEqual([
        'policies.yml:5:24 redis.replica_ack_timeout: must be at least 1s, got 0s',
      ]);
    });
  });

  it('rejects a policy without a type, listing the known ones', () => {
    const text = ['version: 1', 'gitlab: { url: "https://x.example" }', 'policies:', '  - name: p'].join('\n');
    expect(problemsOf(text)).toEqual([
      'policies.yml:4:5 policies[0].type: missing: every policy needs a type; known types: example',
    ]);
  });

  it('fails every unknown type when no policy type is installed', () => {
    const text = [
      'version: 1',
      'gitlab: { url: "https://x.example" }',
      'policies:',
      '  - { name: p, type: job_retry }',
    ].join('\n');
    expect(() => parseConfig(text, 'f.yml', { policyTypes: [], env })).toThrow(
      'f.yml:4:22 policies[0].type: unknown policy type "job_retry"; known types: none are installed',
    );
  });

  it('never echoes the token in a problem', () => {
    const text = ['version: 1', 'gitlab:', '  url: not a url', '  token: 12345'].join('\n');
    const problems = problemsOf(text);
    expect(problems).toEqual([
      'policies.yml:3:8 gitlab.url: expected the forge\'s base URL, such as "https://gitlab.example.com"',
      expect.stringMatching(/^policies\.yml:4:10 gitlab\.token: /),
    ]);
    expect(problems.join('\n')).not.toContain('12345');
  });
});

describe('environment interpolation', () => {
  const base = (gitlab: string) => `version: 1\ngitlab:\n${gitlab}\n`;

  it('reads ${VAR} and ${VAR:-default}, typing plain scalars', () => {
    const config = parseConfig(
      base('  url: ${FORGE}/\n  token: "${TOKEN}"\n  concurrency: ${CONCURRENCY:-8}') +
        'dry_run: ${DRY_RUN:-false}\nhttp:\n  port: ${PORT}\nredis:\n  prefix: "${PREFIX:-fw}"',
      'f.yml',
      { policyTypes: types, env: { FORGE: 'https://forge.example', TOKEN: 'secret', PORT: '0' } },
    );
    expect(config.gitlab.url).toBe('https://forge.example/');
    expect(config.gitlab.token).toBe('secret');
    expect(config.gitlab.concurrency).toBe(8);
    expect(config.dry_run).toBe(false);
    expect(config.http.port).toBe(0);
    expect(config.redis.prefix).toBe('fw');
  });

  it('keeps a quoted value a string', () => {
    const text = base('  url: https://x.example\n  token: "${NUMERIC}"');
    expect(parseConfig(text, 'f.yml', { policyTypes: types, env: { NUMERIC: '1234' } }).gitlab.token).toBe('1234');
  });

  it('names a missing variable without default, at its line', () => {
    const problems = problemsOf(base('  url: https://x.example\n  token: ${MISSING_TOKEN}'), { env: {} });
    expect(problems).toEqual([
      'policies.yml:4:10 gitlab.token: environment variable MISSING_TOKEN is not set (write ${MISSING_TOKEN:-default} to give a default)',
    ]);
  });

  it('says an empty variable is empty, not unset, at its line', () => {
    const problems = problemsOf(base('  url: https://x.example\n  token: ${EMPTY_TOKEN}'), {
      env: { EMPTY_TOKEN: '' },
    });
    expect(problems).toEqual([
      'policies.yml:4:10 gitlab.token: environment variable EMPTY_TOKEN is empty (write ${EMPTY_TOKEN:-default} to give a default)',
    ]);
  });

  it('says GITLAB_TOKEN is empty when it stands in for a token the file leaves out', () => {
    const problems = problemsOf(base('  url: https://x.example'), { env: { GITLAB_TOKEN: '' } });
    expect(problems).toEqual([
      'policies.yml:2:1 gitlab.token: environment variable GITLAB_TOKEN is empty; it stands in for gitlab.token, which the file leaves out',
    ]);
  });

  it('treats an empty variable as unset and lets $${...} stand for itself', () => {
    const config = parseConfig(base('  url: https://x.example\n  token: "$${LITERAL}-${EMPTY:-fallback}"'), 'f.yml', {
      policyTypes: types,
      env: { EMPTY: '' },
    });
    expect(config.gitlab.token).toBe('${LITERAL}-fallback');
  });

  it('takes GITLAB_URL, GITLAB_TOKEN and REDIS_URL for keys the file leaves out', () => {
    const config = parseConfig('version: 1\n', 'f.yml', {
      policyTypes: types,
      env: { GITLAB_URL: 'https://env.example', GITLAB_TOKEN: 'env-token', REDIS_URL: 'redis://10.0.0.1:6380' },
    });
    expect(config.gitlab.url).toBe('https://env.example');
    expect(config.gitlab.token).toBe('env-token');
    expect(config.redis.url).toBe('redis://10.0.0.1:6380');
  });
});

describe('checking without the environment (validate --no-env)', () => {
  const check = (text: string) =>
    checkConfig(text, 'policies.yml', { policyTypes: types, env: {}, assumeEnvironment: true });
  const problemsWithoutEnv = (text: string): string[] => {
    try {
      check(text);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems.map(formatProblem);
      throw error;
    }
    throw new Error('expected the file to be invalid');
  };

  it('takes every ${VAR} as set, GITLAB_URL and GITLAB_TOKEN for the keys left out too, and skips only their checks', () => {
    const text = [
      'version: 1',
      'gitlab:',
      '  timeout: "${TIMEOUT}"',
      '  concurrency: ${CONCURRENCY:-8}',
      'http:',
      '  port: ${PORT}',
      'policies:',
      '  - { name: "${NAME}", type: example, interval: "${INTERVAL}", patterns: ["${PATTERN}", "^ok"] }',
      '  - { name: "${NAME}", type: example, interval: 5m }',
    ].join('\n');
    expect(check(text)).toEqual({ policies: 2 });
    // The same file read with an empty environment: every reference is an error, as without the flag.
    const withEnv = problemsOf(text, { env: {} });
    expect(withEnv).toHaveLength(8);
    for (const problem of withEnv) expect(problem).toMatch(/is not set|missing: expected/);
  });

  it('returns the configuration when the file reads no variable', () => {
    const checked = check(
      'version: 1\ngitlab: { url: "https://x.example", token: t }\npolicies: [{ name: a, type: example, interval: 1m }]',
    );
    expect(checked.policies).toBe(1);
    expect(checked.config?.gitlab.url).toBe('https://x.example');
  });

  it('still reports every problem that does not depend on a variable, at its line', () => {
    const text = [
      'version: 1', //                                                                1
      'gitlab: { url: "${GITLAB_URL}", timeout: 5 minutes }', //                      2
      'dry_rn: true', //                                                              3
      'policies:', //                                                                 4
      '  - { name: a, type: example, interval: "${I}", patterns: ["(?<=x)y"] }', //  5
      '  - { name: a, type: example, interval: 1m, limit: "${LIMIT}" }', //          6
      '  - { name: b, type: exampel }', //                                           7
      '  - { name: c, type: example, interval: "${UNCLOSED" }', //                   8
    ].join('\n');
    const problems = problemsWithoutEnv(text).map((line) => line.replace(/: .*$/, ''));
    expect(problems).toEqual([
      'policies.yml:2:42 gitlab.timeout',
      'policies.yml:3:1 dry_rn',
      'policies.yml:5:60 policies[0].patterns[0]',
      'policies.yml:6:13 policies[1].name',
      'policies.yml:7:22 policies[2].type',
      'policies.yml:8:41 policies[3].interval',
    ]);
  });

  it('does not read the environment even when it is there', () => {
    const checked = checkConfig('version: 1\ngitlab: { url: "${FORGE}", token: t }', 'policies.yml', {
      policyTypes: types,
      env: { FORGE: 'not a url' },
      assumeEnvironment: true,
    });
    expect(checked).toEqual({ policies: 0 });
  });
});

describe('files and schema', () => {
  it('reports a missing file as a problem of that file', () => {
    const file = join(tmpdir(), 'forgewarden-no-such-file.yml');
    expect(() => loadConfigFile(file, { policyTypes: types, env })).toThrow(
      `${file}:1:1 (file): cannot read the policy file: no such file`,
    );
  });

  it('loads a file from disk', () => {
    const dir = tempDir('config');
    const file = join(dir, 'p.yml');
    writeFileSync(file, 'version: 1\ngitlab: { url: "https://x.example" }\n');
    expect(loadConfigFile(file, { policyTypes: types, env }).policies).toEqual([]);
  });

  it('describes the written form as JSON Schema, policy types included', () => {
    const schema = configJsonSchema(types) as {
      properties: Record<string, { properties?: Record<string, unknown>; items?: unknown }>;
      required: string[];
    };
    expect(schema.required).toEqual(expect.arrayContaining(['version', 'gitlab']));
    expect(schema.properties.gitlab?.properties?.timeout).toMatchObject({ type: 'string', default: '30s' });
    expect(JSON.stringify(schema.properties.policies?.items)).toContain('"const":"example"');
  });
});

describe('hostile files', () => {
  const head = ['version: 1', 'gitlab: { url: "https://x.example" }'];

  it('stops an alias bomb at the alias where the nesting starts', () => {
    const lines = [...head, 'a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let level = 1; level < 9; level++)
      lines.push(
        `a${level}: &a${level} [${Array(9)
          .fill(`*a${level - 1}`)
          .join(', ')}]`,
      );
    expect(problemsOf(lines.join('\n'))).toEqual([
      'policies.yml:5:10 a2[0]: aliases here expand to more than 1000 copies (nested aliases grow exponentially); write the values out instead',
    ]);
  });

  it('takes a few aliases, and one that refers to its own mapping, as ordinary values', () => {
    const text = [
      ...head,
      'policies:',
      '  - &p { name: p1, type: example, interval: 1h, patterns: &pats ["^a"] }',
      '  - { name: p2, type: example, interval: 1h, patterns: *pats }',
    ];
    expect(parseConfig(text.join('\n'), 'f.yml', { policyTypes: types, env }).policies.map((p) => p.name)).toEqual([
      'p1',
      'p2',
    ]);
    expect(problemsOf(['version: 1', 'gitlab: &g { url: "https://x.example", self: *g }'].join('\n'))).toEqual([
      'policies.yml:2:40 gitlab.self: unknown key "self"; known keys: url, token, token_file, token_rotation, timeout, connect_timeout, start_timeout, max_requests_per_minute, concurrency',
    ]);
  });

  it('refuses nesting deeper than any policy file needs, at the first node too deep', () => {
    expect(problemsOf([...head, `x: ${'['.repeat(70)}${']'.repeat(70)}`].join('\n'))).toEqual([
      'policies.yml:3:67 (syntax): nested more than 64 levels deep',
    ]);
  });

  it('says when nesting is too deep even to parse', () => {
    expect(problemsOf([...head, `x: ${'['.repeat(20_000)}${']'.repeat(20_000)}`].join('\n'))).toEqual([
      expect.stringMatching(/^policies\.yml:3:\d+ \(syntax\): nested too deeply to parse \(at most 64 levels\)$/),
    ]);
  });

  it('names a merge key as such, not the missing type it causes', () => {
    const text = [...head, 'policies:', '  - &p { name: p1, type: example, interval: 1h }', '  - { <<: *p, name: p2 }'];
    expect(problemsOf(text.join('\n'))).toEqual([
      'policies.yml:5:7 policies[1].<<: merge keys (<<) are not supported; write the keys out',
    ]);
  });

  it('refuses tags that other loaders turn into objects', () => {
    expect(
      problemsOf([...head, 'dry_run: !!python/object:os.system x', 'http: { host: !local x }'].join('\n')),
    ).toEqual([
      'policies.yml:3:10 (syntax): Unresolved tag: tag:yaml.org,2002:python/object:os.system',
      'policies.yml:4:15 (syntax): Unresolved tag: !local',
    ]);
  });

  it('refuses a raw control character, at its position', () => {
    expect(problemsOf([...head, 'redis: { prefix: "a\u0007b" }'].join('\n'))).toEqual([
      'policies.yml:3:20 (file): control character U+0007 is not allowed in YAML; remove it, or write it as an escape in a double-quoted string',
    ]);
  });

  it('lists the first 20 syntax errors and says how many follow', () => {
    const problems = problemsOf(
      [
        ...head,
        'policies:',
        ...Array.from({ length: 30 }, (_, i) => `  - { name: p${i}, name: q${i}, type: example }`),
      ].join('\n'),
    );
    expect(problems).toHaveLength(21);
    expect(problems[20]).toMatch(
      /^policies\.yml:\d+:\d+ \(syntax\): \d+ more syntax errors from here on are not listed; fix the ones above first$/,
    );
  });

  it('says a token the parser cannot place once: every token after it is its echo', () => {
    const problems = problemsOf(
      [...head, 'policies:', ...Array.from({ length: 30 }, (_, i) => `  - { name: \${A${i}}, type: example }`)].join(
        '\n',
      ),
    );
    expect(problems).toEqual(['policies.yml:4:14 (syntax): Unexpected flow-map-start at node end']);
  });

  it('refuses a second document', () => {
    expect(problemsOf([...head, '---', 'dry_run: false'].join('\n'))).toEqual([
      'policies.yml:3:1 (syntax): the file holds more than one YAML document (a second "---"); a policy file is one document',
    ]);
  });

  it('quotes only the start of a long value it echoes', () => {
    const long = 'x'.repeat(100_000);
    const text = [...head, 'policies:', `  - { name: p, type: ${long}, ${long}: 1 }`].join('\n');
    const problems = problemsOf(text);
    expect(problems).toEqual([
      `policies.yml:4:22 policies[0].type: unknown policy type "${'x'.repeat(60)}… (99940 more characters)"; known types: example`,
    ]);
  });

  it('names a type that is no name by its kind', () => {
    expect(problemsOf([...head, 'policies:', '  - { name: p, type: [a, b] }'].join('\n'))).toEqual([
      'policies.yml:4:22 policies[0].type: expected the name of a policy type, got a list; known types: example',
    ]);
  });
});

describe('environment references, hostile', () => {
  const withToken = (token: string) =>
    ['version: 1', 'gitlab:', '  url: https://x.example', `  token: ${token}`].join('\n');

  it('refuses an unclosed ${ rather than keeping it as text', () => {
    expect(problemsOf(withToken('${GITLAB_TOKEN'))).toEqual([
      'policies.yml:4:10 gitlab.token: "${GITLAB_TOKEN" is not closed with "}"; write ${NAME} or ${NAME:-default} (a name is letters, digits and _), or $${ for a literal ${',
    ]);
  });

  it('refuses a reference with an invalid name or a shell form it does not know', () => {
    expect(problemsOf(withToken('"${1X}-${A:=b}"'))).toEqual([
      'policies.yml:4:10 gitlab.token: "${1X}" is not a valid reference; write ${NAME} or ${NAME:-default} (a name is letters, digits and _), or $${ for a literal ${',
      'policies.yml:4:10 gitlab.token: "${A:=b}" is not a valid reference; write ${NAME} or ${NAME:-default} (a name is letters, digits and _), or $${ for a literal ${',
    ]);
  });

  it.each([
    ['$${A}', '${A}'],
    ['$$${A}', '$${A}'],
    ['$${A:-d}', '${A:-d}'],
    ['${A}${B:-b}', 'ab'],
    ['a$b${A}', 'a$ba'],
    ['$${unclosed', '$${unclosed'],
    ['${A:-x:-y}', 'a'],
    ['${MISSING:-}', ''],
    ['${MISSING:-{x}', '{x'],
  ])('reads %j as %j', (written, expected) => {
    expect(substitute(written, { A: 'a' })).toMatchObject({ text: expected, problems: [] });
  });

  it('reports each unclosed ${ of a long value once, reading on', () => {
    expect(substitute('${A:-'.repeat(10_000), {}).problems).toHaveLength(1);
  });
});

describe('reading the file', () => {
  const write = (name: string, content: string | Buffer) => {
    const file = join(tempDir('read'), name);
    writeFileSync(file, content);
    return file;
  };

  it('refuses a file over the size limit without parsing it', () => {
    const file = write('big.yml', `version: 1\nx: "${'x'.repeat(MAX_POLICY_FILE_BYTES)}"\n`);
    expect(() => loadConfigFile(file, { policyTypes: types, env })).toThrow(
      `${file}:1:1 (file): the policy file is larger than 1 MiB; is this the right file?`,
    );
  });

  it('points at the first byte that is not UTF-8', () => {
    const file = write(
      'latin1.yml',
      Buffer.concat([Buffer.from('version: 1\ngitlab:\n  token: caf'), Buffer.from([0xe9]), Buffer.from('-x\n')]),
    );
    expect(() => loadConfigFile(file, { policyTypes: types, env })).toThrow(
      `${file}:3:13 (file): byte 0xE9 is not UTF-8; save the policy file as UTF-8`,
    );
  });

  it('counts columns of the first line without a byte order mark', () => {
    const file = write('bom.yml', '\uFEFFversion: 2\ngitlab: { url: "https://x.example" }\n');
    expect(() => loadConfigFile(file, { policyTypes: types, env })).toThrow(
      `${file}:1:10 version: expected version: 1`,
    );
  });

  it('says a directory is a directory', () => {
    const dir = tempDir('dir');
    expect(() => loadConfigFile(dir, { policyTypes: types, env })).toThrow(
      `${dir}:1:1 (file): cannot read the policy file: it is a directory`,
    );
  });
});

describe('warnings of a valid file', () => {
  const load = (url: string, fileEnv: NodeJS.ProcessEnv = env) =>
    parseConfig(['version: 1', 'gitlab:', `  url: ${url}`].join('\n'), 'f.yml', { policyTypes: types, env: fileEnv });

  it('warns at the URL when plain http:// leaves the machine', () => {
    expect(configWarnings(load('http://forge.internal:8080'), 'f.yml').map(formatProblem)).toEqual([
      'f.yml:3:8 gitlab.url: http:// to forge.internal:8080 sends the token unencrypted over the network; use https:// (plain http:// is for this machine only)',
    ]);
  });

  it('says when the URL came from GITLAB_URL', () => {
    const config = parseConfig('version: 1\n', 'f.yml', {
      policyTypes: types,
      env: { ...env, GITLAB_URL: 'http://10.0.0.5' },
    });
    expect(configWarnings(config, 'f.yml').map((warning) => warning.message)).toEqual([
      'http:// to 10.0.0.5 (from GITLAB_URL) sends the token unencrypted over the network; use https:// (plain http:// is for this machine only)',
    ]);
  });

  it.each([
    'https://forge.example',
    'http://127.0.0.1:9480',
    'http://127.8.9.10',
    'http://localhost:9480',
    'http://LOCALHOST./',
    'http://[::1]:9480',
    'http://[::ffff:127.0.0.1]/',
    'http://2130706433/',
  ])('says nothing about %s', (url) => {
    expect(configWarnings(load(url), 'f.yml')).toEqual([]);
  });

  it.each([
    'http://128.0.0.1',
    'http://localhost.example.com',
    'http://[::2]',
    'http://[::ffff:10.0.0.1]',
    'http://0.0.0.0',
  ])('warns about %s', (url) => {
    expect(configWarnings(load(url), 'f.yml')).toHaveLength(1);
  });

  it('points at line 1 for a configuration that was not read from a file', () => {
    const config = { ...load('http://forge.example') };
    expect(configWarnings(config, 'built.yml')[0]).toMatchObject({
      file: 'built.yml',
      line: 1,
      col: 1,
      path: 'gitlab.url',
    });
  });
});

describe('the console token', () => {
  const file = (http: string) =>
    ['version: 1', 'gitlab: { url: "https://gitlab.example.com", token: t }', http].join('\n');

  it('is optional, and when given at least 16 characters, said at its line', () => {
    expect(
      parseConfig(file('http: { host: 0.0.0.0 }'), 'policies.yml', { policyTypes: types, env }).http.console_token,
    ).toBeUndefined();
    expect(
      parseConfig(file('http: { console_token: "${CONSOLE}" }'), 'policies.yml', {
        policyTypes: types,
        env: { ...env, CONSOLE: 'a-console-token-long-enough' },
      }).http.console_token,
    ).toBe('a-console-token-long-enough');
    expect(problemsOf(file('http: { console_token: short }'))).toEqual([
      'policies.yml:3:24 http.console_token: the console token must be at least 16 characters: it is all that keeps the pause switch from anyone who reaches the port',
    ]);
  });
});

describe('the webhooks section', () => {
  const file = (...webhooks: string[]) =>
    ['version: 1', 'gitlab: { url: "https://gitlab.example.com", token: t }', ...webhooks].join('\n');

  it('is off by default, at /webhooks/gitlab', () => {
    const config = parseConfig(file(), 'policies.yml', { policyTypes: types, env });
    expect(config.webhooks).toEqual({ enabled: false, path: '/webhooks/gitlab' });
  });

  it('names what is wrong: no token when enabled, a short token, a path taken, the HTTP server off', () => {
    expect(problemsOf(file('webhooks: { enabled: true }'))).toEqual([
      'policies.yml:3:1 webhooks.secret_token: missing: webhooks are enabled, so the secret token is required: without it anyone who can reach the port could make the daemon act',
    ]);
    expect(problemsOf(file('webhooks: { enabled: true, secret_token: short }'))).toEqual([
      "policies.yml:3:42 webhooks.secret_token: the secret token must be at least 16 characters: it is all that tells the forge's deliveries from anyone else's",
    ]);
    expect(problemsOf(file('webhooks: { enabled: true, secret_token: a-long-enough-secret, path: /metrics }'))).toEqual(
      [
        'policies.yml:3:70 webhooks.path: this path is taken by /healthz, /readyz, /metrics or the console (/, /audit, /policies/…, /login, /logout)',
      ],
    );
    for (const path of ['/', '/login', '/policies/x/pause', '/audit/']) {
      expect(
        problemsOf(file(`webhooks: { enabled: true, secret_token: a-long-enough-secret, path: "${path}" }`)),
      ).toHaveLength(1);
    }
    expect(
      problemsOf(file('http: { port: 0 }', 'webhooks: { enabled: true, secret_token: a-long-enough-secret }')),
    ).toEqual([
      'policies.yml:4:22 webhooks.enabled: webhooks are delivered to the HTTP server, which http.port: 0 turns off',
    ]);
  });
});

describe('the daemon’s own token from a file, and its rotation', () => {
  const file = (gitlab: string[], env: NodeJS.ProcessEnv = { GITLAB_TOKEN: 'glpat-left-in-the-environment' }) =>
    parseConfig(['version: 1', 'gitlab:', '  url: https://gitlab.example.com', ...gitlab].join('\n'), 'policies.yml', {
      policyTypes: types,
      env,
    });
  const problems = (gitlab: string[], env: NodeJS.ProcessEnv = {}): string[] => {
    try {
      file(gitlab, env);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems.map(formatProblem);
      throw error;
    }
    throw new Error('expected the file to be invalid');
  };

  it('takes token_file instead of token, and GITLAB_TOKEN left in the environment does not become a second token', () => {
    const config = file([
      '  token_file: /var/lib/forgewarden/token',
      '  token_rotation: { before_expiry: 20d, lifetime: 60d }',
    ]);
    expect(config.gitlab.token).toBeUndefined();
    expect(config.gitlab.token_file).toBe('/var/lib/forgewarden/token');
    expect(config.gitlab.token_rotation).toEqual({
      before_expiry: 20 * 86_400_000,
      lifetime: 60 * 86_400_000,
      settle: 600_000,
      replicas: 1,
      shared_file: false,
    });
    // Without --no-env the environment's token is not assumed either.
    expect(
      checkConfig('version: 1\ngitlab: { url: "https://x.example", token_file: /t }\n', 'policies.yml', {
        policyTypes: types,
        env: {},
        assumeEnvironment: true,
      }).config?.gitlab.token,
    ).toBeUndefined();
  });

  it('refuses two tokens, a relative file, and a rotation that cannot be safe, each at its key', () => {
    expect(problems(['  token: glpat-x', '  token_file: /t'])).toEqual([
      'policies.yml:5:15 gitlab.token_file: give either gitlab.token or gitlab.token_file, not both (GITLAB_TOKEN stands in for token only when there is no token_file)',
    ]);
    expect(problems([])).toEqual([
      'policies.yml:2:1 gitlab.token: missing: expected an access token (set GITLAB_TOKEN, or write token: ${GITLAB_TOKEN}, or token_file)',
    ]);
    expect(problems(['  token_file: secrets/token'])).toEqual([
      'policies.yml:4:15 gitlab.token_file: expected an absolute path: every replica and restart must find the same file',
    ]);
    expect(problems(['  token: glpat-x', '  token_rotation: {}'])).toEqual([
      'policies.yml:5:19 gitlab.token_rotation: rotation writes each new value into gitlab.token_file: a token given in the file or the environment would be lost at the next restart',
    ]);
    expect(
      problems([
        '  token_file: /t',
        '  timeout: 10m',
        '  token_rotation: { before_expiry: 90d, lifetime: 400d, settle: 5m, replicas: 3 }',
      ]),
    ).toEqual([
      "policies.yml:6:3 gitlab.token_rotation.shared_file: missing: 3 replicas rotate one token: each must read the same token file, or a replica goes on with a rotated token and the forge's reuse detection revokes the new one; set shared_file: true once the file is on storage they share",
      'policies.yml:6:51 gitlab.token_rotation.lifetime: must be at most 365d: the forge refuses a longer expiry',
      'policies.yml:6:65 gitlab.token_rotation.settle: must be at least twice gitlab.timeout: a request sent with a token just retired may still be in flight when it is rotated',
    ]);
    expect(
      problems([
        '  token_file: /t',
        '  timeout: 10m',
        '  token_rotation: { before_expiry: 90d, lifetime: 90d, settle: 5m, replicas: 3 }',
      ]),
    ).toEqual([
      "policies.yml:6:3 gitlab.token_rotation.shared_file: missing: 3 replicas rotate one token: each must read the same token file, or a replica goes on with a rotated token and the forge's reuse detection revokes the new one; set shared_file: true once the file is on storage they share",
      'policies.yml:6:36 gitlab.token_rotation.before_expiry: must be shorter than lifetime, or every rotation would be due again at once',
      'policies.yml:6:64 gitlab.token_rotation.settle: must be at least twice gitlab.timeout: a request sent with a token just retired may still be in flight when it is rotated',
    ]);
    expect(
      file(['  token_file: /t', '  token_rotation: { replicas: 3, shared_file: true }']).gitlab.token_rotation
        ?.replicas,
    ).toBe(3);
  });
});
