import { z } from 'zod';
import type { ProjectSelection } from '../../config/project-selection';
import { configJsonSchema } from '../../config/schema';
import { aConfig } from '../../../test/support/builders/jobs';
import { DURATION_PROBLEM, policyFiles } from '../../../test/support/schema-spec';
import { type JobRetryConfig, jobRetryPolicy } from './job-retry.schema';

const { file, parse, problemsOf } = policyFiles(jobRetryPolicy, 'retry-flaky');

describe('job_retry schema', () => {
  it('fills every default', () => {
    const { projects, ...config } = parse(file('projects: [acme/api]', 'interval: 1m')).policies[0] as JobRetryConfig;
    expect(projects.toJSON()).toEqual(['acme/api']);
    expect(config).toEqual({
      name: 'retry-flaky',
      type: 'job_retry',
      include_archived: false,
      interval: 60_000,
      lookback: 3_600_000,
      match: { allow_failure: false },
      max_retries: 2,
      delay: 0,
      log_tail: 65_536,
      max_actions_per_run: 50,
      storm: {
        enabled: true,
        failures: 50,
        projects: 10,
        within: 300_000,
        failed_again: 0.5,
        min_retries: 10,
        probe_backoff: 60_000,
        probe_backoff_max: 480_000,
        calm_after: 900_000,
      },
    });
  });

  it('reads storm settings and refuses a calm_after that a failing probe could outlast', () => {
    const config = aConfig({
      storm: {
        failures: 200,
        projects: 3,
        within: '10m',
        probe_backoff: '30s',
        probe_backoff_max: '4m',
        calm_after: '5m',
      },
    });
    expect(config.storm).toMatchObject({
      failures: 200,
      projects: 3,
      within: 600_000,
      probe_backoff: 30_000,
      probe_backoff_max: 240_000,
      calm_after: 300_000,
    });
    expect(aConfig({ storm: { enabled: false } }).storm.enabled).toBe(false);
    expect(() => aConfig({ storm: { probe_backoff_max: '20m' } })).toThrow(
      'storm.calm_after must be longer than storm.probe_backoff_max',
    );
    expect(() => aConfig({ storm: { failures: 1 } })).toThrow('storm.failures must be at least 2');
    expect(() => aConfig({ storm: { failed_again: 1.5 } })).toThrow('storm.failed_again must be at most 1');
  });

  it('reads every field as written', () => {
    const config = aConfig({
      projects: ['acme/api', 42, '7'],
      interval: '5m',
      lookback: '2d',
      match: {
        job_names: ['^test'],
        stages: ['test'],
        refs: ['^main$'],
        failure_log: ['(?i)connection reset'],
        allow_failure: true,
        tag: false,
      },
      max_retries: 10,
      delay: '30s',
      log_tail: '1MiB',
      max_actions_per_run: 5,
    });
    expect(config.projects.explicit.map((item) => (item.kind === 'id' ? item.id : item.path))).toEqual([
      'acme/api',
      42,
      7,
    ]);
    expect(config).toMatchObject({
      interval: 300_000,
      lookback: 2 * 86_400_000,
      match: { allow_failure: true, tag: false },
      max_retries: 10,
      delay: 30_000,
      log_tail: 1_048_576,
      max_actions_per_run: 5,
    });
    expect(config.match.job_names?.map(String)).toEqual(['^test']);
    expect(config.match.failure_log?.[0].test('Connection RESET by peer')).toBe(true);
  });

  it('keeps the defaults inside match when match is given in part', () => {
    expect(aConfig({ match: { stages: ['test'] } }).match.allow_failure).toBe(false);
  });

  it.each<[string, string[], string]>([
    [
      'projects missing',
      ['interval: 1m'],
      'policies.yml:4:5 policies[0].projects: missing: expected a list of projects such as [acme/api, 42, "acme/tools/*"]',
    ],
    [
      'projects empty',
      ['projects: []', 'interval: 1m'],
      'policies.yml:6:15 policies[0].projects: give at least one project',
    ],
    [
      'a project that is neither id nor path',
      ['projects: ["acme api"]', 'interval: 1m'],
      'policies.yml:6:16 policies[0].projects[0]: " " cannot appear in a path: paths hold letters a-z, digits, "_", "-" and "."; the wildcards are "*" (within a segment), "**" (any number of segments) and "?" (one character)',
    ],
    [
      'interval missing',
      ['projects: [acme/api]'],
      `policies.yml:4:5 policies[0].interval: missing: ${DURATION_PROBLEM}`,
    ],
    [
      'a bad interval',
      ['projects: [acme/api]', 'interval: soon'],
      `policies.yml:7:15 policies[0].interval: ${DURATION_PROBLEM}`,
    ],
    [
      'interval 0s',
      ['projects: [acme/api]', 'interval: 0s'],
      'policies.yml:7:15 policies[0].interval: must be at least 1s, got 0s',
    ],
    [
      'an interval under a second',
      ['projects: [acme/api]', 'interval: 500ms'],
      'policies.yml:7:15 policies[0].interval: must be at least 1s, got 500ms',
    ],
    [
      'a bad lookback',
      ['projects: [acme/api]', 'interval: 1m', 'lookback: 1 hour'],
      `policies.yml:8:15 policies[0].lookback: ${DURATION_PROBLEM}`,
    ],
    [
      'a bad delay',
      ['projects: [acme/api]', 'interval: 1m', 'delay: -5s'],
      `policies.yml:8:12 policies[0].delay: ${DURATION_PROBLEM}`,
    ],
    [
      'a delay over a day',
      ['projects: [acme/api]', 'interval: 1m', 'delay: 30d'],
      'policies.yml:8:12 policies[0].delay: must be at most 1d: a retry that waits longer is no retry of a flaky job',
    ],
    [
      'max_retries 11',
      ['projects: [acme/api]', 'interval: 1m', 'max_retries: 11'],
      'policies.yml:8:18 policies[0].max_retries: max_retries must be at most 10',
    ],
    [
      'max_retries 0',
      ['projects: [acme/api]', 'interval: 1m', 'max_retries: 0'],
      'policies.yml:8:18 policies[0].max_retries: max_retries must be at least 1',
    ],
    [
      'max_retries 1.5',
      ['projects: [acme/api]', 'interval: 1m', 'max_retries: 1.5'],
      'policies.yml:8:18 policies[0].max_retries: max_retries must be a whole number',
    ],
    [
      'a bad log_tail',
      ['projects: [acme/api]', 'interval: 1m', 'log_tail: lots'],
      'policies.yml:8:15 policies[0].log_tail: expected a size such as 65536, 64KiB or 1MiB',
    ],
    [
      'max_actions_per_run 0',
      ['projects: [acme/api]', 'interval: 1m', 'max_actions_per_run: 0'],
      'policies.yml:8:26 policies[0].max_actions_per_run: max_actions_per_run must be at least 1',
    ],
    [
      'a bad RE2 in failure_log',
      ['projects: [acme/api]', 'interval: 1m', 'match: { failure_log: ["(?=reset)"] }'],
      'policies.yml:8:28 policies[0].match.failure_log[0]: invalid RE2 regular expression: RE2 does not support look-ahead `(?=`',
    ],
    [
      'a bad RE2 in job_names',
      ['projects: [acme/api]', 'interval: 1m', 'match: { job_names: ["(test"] }'],
      'policies.yml:8:26 policies[0].match.job_names[0]: invalid RE2 regular expression: missing closing ): `(test`',
    ],
    [
      'an empty stages list',
      ['projects: [acme/api]', 'interval: 1m', 'match: { stages: [] }'],
      'policies.yml:8:22 policies[0].match.stages: give at least one expression, or leave the key out',
    ],
    [
      'refs that is not a list',
      ['projects: [acme/api]', 'interval: 1m', 'match: { refs: "^main$" }'],
      'policies.yml:8:20 policies[0].match.refs: Invalid input: expected array, received string',
    ],
    [
      'tag that is not a boolean',
      ['projects: [acme/api]', 'interval: 1m', 'match: { tag: "yes" }'],
      'policies.yml:8:19 policies[0].match.tag: expected true (tag pipelines only) or false (branch pipelines only)',
    ],
    [
      'allow_failure that is not a boolean',
      ['projects: [acme/api]', 'interval: 1m', 'match: { allow_failure: 1 }'],
      'policies.yml:8:29 policies[0].match.allow_failure: expected true or false',
    ],
    [
      'an unknown key in match, with a suggestion',
      ['projects: [acme/api]', 'interval: 1m', 'match: { job_name: ["^test"] }'],
      'policies.yml:8:14 policies[0].match.job_name: unknown key "job_name"; did you mean "job_names"?',
    ],
    [
      'an unknown key in the policy, with a suggestion',
      ['projects: [acme/api]', 'interval: 1m', 'max_retry: 3'],
      'policies.yml:8:5 policies[0].max_retry: unknown key "max_retry"; did you mean "max_retries"?',
    ],
  ])('rejects %s', (_title, lines, problem) => {
    const problems = problemsOf(file(...lines));
    expect(problems).toEqual([problem]);
  });

  it('takes globs and excludes, and reads which groups to list for them', () => {
    const [policy] = parse(
      file(
        'projects: [acme/api, "acme/platform/**", "!acme/platform/legacy-*"]',
        'interval: 1m',
        'include_archived: true',
      ),
    ).policies as JobRetryConfig[];
    expect(policy.include_archived).toBe(true);
    expect(policy.projects.discoveryRoots()).toEqual([{ group: 'acme/platform', includeSubgroups: true }]);
    expect(policy.projects.matches('acme/platform/tools/web')).toBe(true);
    expect(policy.projects.excluded('acme/platform/legacy-api')).toBe(true);
  });

  it('points at a glob that does not start with a group path', () => {
    expect(problemsOf(file('projects: [acme/api, "*/web"]', 'interval: 1m'))).toEqual([
      expect.stringMatching(/^policies\.yml:6:26 policies\[0\]\.projects\[1\]: /),
    ]);
  });

  it('takes a zero delay and a zero lookback: waiting for nothing is no loop', () => {
    const [policy] = parse(file('projects: [acme/api]', 'interval: 1s', 'delay: 0s', 'lookback: 0s')).policies;
    expect(policy).toMatchObject({ interval: 1_000, delay: 0, lookback: 0 });
  });

  it('reports every problem at once', () => {
    const problems = problemsOf(
      file('projects: []', 'interval: 1m', 'max_retries: 11', 'match: { failure_log: ["(?<=x)"] }'),
    );
    expect(problems).toHaveLength(3);
  });

  it('describes its fields in the JSON Schema, in their written form', () => {
    const schema = JSON.stringify(configJsonSchema([jobRetryPolicy]));
    expect(schema).toContain('Retries failed CI jobs whose failure looks transient.');
    expect(schema).toContain('Retries per job name per pipeline, retries made by people included.');
    expect(schema).toContain('true: only jobs of tag pipelines; false: only jobs of branch pipelines. Omitted: both.');
  });

  it('gives a config type whose fields are the converted values', () => {
    const config = aConfig();
    const interval: number = config.interval;
    const projects: ProjectSelection = config.projects;
    expect({ interval, projects: projects.toJSON(), paths: projects.paths }).toEqual({
      interval: 60_000,
      projects: ['acme/api'],
      paths: ['acme/api'],
    });
    expect(jobRetryPolicy.schema).toBeInstanceOf(z.ZodObject);
  });
});
