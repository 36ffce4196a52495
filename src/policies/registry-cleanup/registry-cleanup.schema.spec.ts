import { configJsonSchema } from '../../config/schema';
import { aCleanupConfig } from '../../../test/support/builders/registry';
import { DURATION_PROBLEM, policyFiles } from '../../../test/support/schema-spec';
import { deletePattern, registryCleanupPolicy } from './registry-cleanup.schema';

const { file, parse, problemsOf } = policyFiles(registryCleanupPolicy, 'image-cleanup');

const VALID = ['schedule: "0 3 * * *"', 'projects: [acme/api]', 'name_regex_delete: ".*"'];

describe('registry_cleanup schema', () => {
  it('fills every default', () => {
    const config = parse(file(...VALID)).policies[0];
    expect(JSON.parse(JSON.stringify(config))).toEqual({
      name: 'image-cleanup',
      type: 'registry_cleanup',
      schedule: '0 3 * * *',
      projects: ['acme/api'],
      include_archived: false,
      name_regex_delete: '.*',
      mode: 'bulk',
      max_follow_ups: 24,
      delete_empty_repositories: false,
      max_actions_per_run: 1000,
    });
  });

  it('reads every field, keeping older_than as written next to its length', () => {
    const config = aCleanupConfig({
      schedule: '30 2 * * 1',
      timezone: 'Europe/Berlin',
      projects: ['acme/api', 42],
      groups: ['acme', 7],
      repositories: ['/app$'],
      name_regex_keep: '^(main|v\\d+\\.\\d+\\.\\d+)$',
      keep_n: 10,
      older_than: '1month',
      mode: 'per_tag',
      max_follow_ups: 3,
      delete_empty_repositories: true,
      max_actions_per_run: 50,
      dry_run: false,
    });
    expect(config.projects?.toJSON()).toEqual(['acme/api', 42]);
    expect(config).toMatchObject({
      timezone: 'Europe/Berlin',
      groups: ['acme', 7],
      keep_n: 10,
      older_than: { text: '1month', ms: 30 * 86_400_000 },
      mode: 'per_tag',
      max_follow_ups: 3,
      delete_empty_repositories: true,
      max_actions_per_run: 50,
    });
    expect(config.repositories?.map(String)).toEqual(['/app$']);
    expect(config.name_regex_keep?.source).toBe('^(main|v\\d+\\.\\d+\\.\\d+)$');
  });

  it.each([
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['7d', 7 * 86_400_000],
    ['2w', 14 * 86_400_000],
    ['1month', 30 * 86_400_000],
  ])('accepts the forge’s older_than form %s', (text, ms) => {
    expect(aCleanupConfig({ older_than: text }).older_than).toEqual({ text, ms });
  });

  it('takes groups alone, without projects', () => {
    expect(aCleanupConfig({ projects: undefined, groups: ['acme'] }).groups).toEqual(['acme']);
  });

  it('accepts the deprecated name_regex in place of name_regex_delete; with both, name_regex_delete wins', () => {
    expect(deletePattern(aCleanupConfig({ name_regex_delete: undefined, name_regex: 'tmp-.*' }))).toBe('tmp-.*');
    expect(deletePattern(aCleanupConfig({ name_regex_delete: 'build-.*', name_regex: 'tmp-.*' }))).toBe('build-.*');
  });

  it.each<[string, string[], string]>([
    [
      'projects and groups missing',
      ['schedule: "0 3 * * *"', 'name_regex_delete: ".*"'],
      'policies.yml:4:5 policies[0].projects: missing: give at least one project or group (projects, groups or both)',
    ],
    [
      'projects and groups empty',
      ['schedule: "0 3 * * *"', 'projects: []', 'groups: []', 'name_regex_delete: ".*"'],
      'policies.yml:7:15 policies[0].projects: give at least one project',
    ],
    [
      'name_regex_delete missing',
      ['schedule: "0 3 * * *"', 'projects: [acme/api]'],
      'policies.yml:4:5 policies[0].name_regex_delete: missing: expected the RE2 expression of the tags to delete, such as ".*"',
    ],
    [
      'an invalid delete regex',
      ['schedule: "0 3 * * *"', 'projects: [acme/api]', 'name_regex_delete: "(build"'],
      'policies.yml:8:24 policies[0].name_regex_delete: invalid RE2 regular expression: missing closing ): `(build`',
    ],
    [
      'an invalid keep regex (a look-ahead, not RE2)',
      [...VALID, 'name_regex_keep: "(?!main)"'],
      'policies.yml:9:22 policies[0].name_regex_keep: invalid RE2 regular expression: RE2 does not support negative look-ahead `(?!`',
    ],
    [
      'an invalid name_regex',
      ['schedule: "0 3 * * *"', 'projects: [acme/api]', 'name_regex: "a**"'],
      'policies.yml:8:17 policies[0].name_regex: invalid RE2 regular expression: invalid nested repetition operator: `**`',
    ],
    [
      'an invalid repositories regex',
      [...VALID, 'repositories: ["[app"]'],
      'policies.yml:9:20 policies[0].repositories[0]: invalid RE2 regular expression: missing closing ]: `[app`',
    ],
    [
      'schedule missing',
      ['projects: [acme/api]', 'name_regex_delete: ".*"'],
      'policies.yml:4:5 policies[0].schedule: missing: expected a cron expression such as "0 3 * * *"',
    ],
    [
      'a bad schedule',
      ['schedule: "every night"', 'projects: [acme/api]', 'name_regex_delete: ".*"'],
      'policies.yml:6:15 policies[0].schedule: expected a cron expression with 5 fields (minute hour day-of-month month day-of-week), got 2',
    ],
    [
      'an unknown time zone',
      [...VALID, 'timezone: Mars/Olympus'],
      'policies.yml:9:15 policies[0].timezone: unknown time zone "Mars/Olympus"; expected an IANA name such as "Europe/Berlin"',
    ],
    [
      'a bad older_than',
      [...VALID, 'older_than: 2 weeks'],
      `policies.yml:9:17 policies[0].older_than: ${DURATION_PROBLEM}`,
    ],
    ['keep_n below 0', [...VALID, 'keep_n: -1'], 'policies.yml:9:13 policies[0].keep_n: keep_n must be at least 0'],
    [
      'keep_n not whole',
      [...VALID, 'keep_n: 2.5'],
      'policies.yml:9:13 policies[0].keep_n: keep_n must be a whole number',
    ],
    ['an unknown mode', [...VALID, 'mode: fast'], 'policies.yml:9:11 policies[0].mode: expected bulk or per_tag'],
    [
      'max_follow_ups below 0',
      [...VALID, 'max_follow_ups: -1'],
      'policies.yml:9:21 policies[0].max_follow_ups: max_follow_ups must be at least 0',
    ],
    [
      'projects that is not a list',
      ['schedule: "0 3 * * *"', 'projects: acme/api', 'name_regex_delete: ".*"'],
      'policies.yml:7:15 policies[0].projects: expected a list of projects such as [acme/api, 42, "acme/tools/*"]',
    ],
    [
      'a group that is no path',
      ['schedule: "0 3 * * *"', 'groups: ["acme corp"]', 'name_regex_delete: ".*"'],
      'policies.yml:7:14 policies[0].groups[0]: expected a group id or its full path such as "acme"',
    ],
    [
      'an unknown key, with a suggestion',
      [...VALID, 'keep: 10'],
      'policies.yml:9:5 policies[0].keep: unknown key "keep"; did you mean "keep_n"?',
    ],
  ])('rejects %s', (_title, lines, problem) => {
    expect(problemsOf(file(...lines))).toEqual([problem]);
  });

  it('reports every problem at once, the missing projects among them', () => {
    const problems = problemsOf(file('schedule: "0 3 * * *"', 'name_regex_delete: "(x"', 'keep_n: -1'));
    expect(problems).toEqual([
      'policies.yml:4:5 policies[0].projects: missing: give at least one project or group (projects, groups or both)',
      'policies.yml:7:24 policies[0].name_regex_delete: invalid RE2 regular expression: missing closing ): `(x`',
      'policies.yml:8:13 policies[0].keep_n: keep_n must be at least 0',
    ]);
  });

  it('describes its fields in the JSON Schema', () => {
    const schema = JSON.stringify(configJsonSchema([registryCleanupPolicy]));
    expect(schema).toContain('Deletes container-registry tags on a schedule');
    expect(schema).toContain('Deprecated synonym of name_regex_delete');
  });
});
