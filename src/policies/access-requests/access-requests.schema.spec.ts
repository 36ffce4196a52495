import { configJsonSchema } from '../../config/schema';
import { aPolicy } from '../../../test/support/builders/access-requests';
import { DURATION_PROBLEM, policyFiles } from '../../../test/support/schema-spec';
import { accessRequestsPolicy, levelName } from './access-requests.schema';

const LEVELS = 'guest, reporter, developer, maintainer or owner (groups only), or 10, 20, 30, 40 or 50';

const { file, parse, problemsOf } = policyFiles(accessRequestsPolicy, 'staff-access');

const VALID = ['groups: [acme]', 'interval: 5m'];
const RULE = 'rules: [{ approve: developer, when: { email_domains: [acme.com] } }]';

describe('access_requests schema', () => {
  it('fills every default', () => {
    const config = parse(file(...VALID, RULE)).policies[0];
    // Through JSON: the lists are selections, printed back as written.
    expect(JSON.parse(JSON.stringify(config))).toEqual({
      name: 'staff-access',
      type: 'access_requests',
      groups: ['acme'],
      include_archived: false,
      interval: 300_000,
      rules: [{ approve: 30, when: { email_domains: ['acme.com'] } }],
      otherwise: 'leave',
      max_actions_per_run: 100,
    });
  });

  it('reads every field as written', () => {
    const config = aPolicy({
      groups: ['acme', 7],
      projects: ['acme/api', 42],
      interval: '1h',
      rules: [
        {
          approve: 'reporter',
          when: {
            usernames: ['^svc-'],
            email_domains: ['Acme.COM', ' corp.acme.com '],
            two_factor: true,
            external: false,
            bot: false,
            confirmed: true,
            state: 'active',
            min_account_age: '30d',
          },
        },
        { deny: true, when: { usernames: ['^spam'] } },
        { approve: 40 },
      ],
      otherwise: 'deny',
      deny_pending_after: '2w',
      max_actions_per_run: 5,
      dry_run: true,
    });
    expect([config.groups?.toJSON(), config.projects?.toJSON()]).toEqual([
      ['acme', 7],
      ['acme/api', 42],
    ]);
    expect(config).toMatchObject({
      interval: 3_600_000,
      otherwise: 'deny',
      deny_pending_after: 14 * 86_400_000,
      max_actions_per_run: 5,
      dry_run: true,
    });
    const [first, second, third] = config.rules;
    expect(first).toMatchObject({
      approve: 20,
      when: {
        email_domains: ['acme.com', 'corp.acme.com'],
        two_factor: true,
        external: false,
        bot: false,
        confirmed: true,
        state: 'active',
        min_account_age: 30 * 86_400_000,
      },
    });
    expect(first.when?.usernames?.map(String)).toEqual(['^svc-']);
    expect(second).toMatchObject({ deny: true });
    expect(third).toEqual({ approve: 40 });
  });

  it.each([
    ['guest', 10],
    ['reporter', 20],
    ['developer', 30],
    ['maintainer', 40],
    ['owner', 50],
    [10, 10],
    [50, 50],
  ])('takes the level %s for groups', (level, value) => {
    expect(aPolicy({ rules: [{ approve: level }] }).rules[0].approve).toBe(value);
  });

  it('names the levels in reasons', () => {
    expect([10, 20, 30, 40, 50].map((level) => levelName(level as 10))).toEqual([
      'guest',
      'reporter',
      'developer',
      'maintainer',
      'owner',
    ]);
  });

  it('takes projects alone, and a policy without rules that denies old requests', () => {
    expect(aPolicy({ groups: undefined, projects: ['acme/api'] }).projects?.toJSON()).toEqual(['acme/api']);
    expect(aPolicy({ rules: undefined, deny_pending_after: '30d' }).rules).toEqual([]);
    expect(aPolicy({ rules: [], otherwise: 'deny' }).otherwise).toBe('deny');
  });

  it.each<[string, string[], string]>([
    [
      'groups and projects missing',
      ['interval: 5m', RULE],
      'policies.yml:4:5 policies[0].groups: missing: give at least one group or project (groups, projects or both)',
    ],
    [
      'groups empty',
      ['groups: []', 'interval: 5m', RULE],
      'policies.yml:6:13 policies[0].groups: give at least one group',
    ],
    [
      'projects empty',
      ['projects: []', 'interval: 5m', RULE],
      'policies.yml:6:15 policies[0].projects: give at least one project',
    ],
    [
      'a group glob with no literal group',
      ['groups: ["*/platform"]', 'interval: 5m', RULE],
      'policies.yml:6:14 policies[0].groups[0]: a glob starts with a literal group path such as "acme/": the groups a glob selects are found by listing that group, and "*/platform" would have to list every group on the forge',
    ],
    [
      'a project glob that can match nothing',
      ['projects: ["acme//api"]', 'interval: 5m', RULE],
      'policies.yml:6:16 policies[0].projects[0]: "//" (an empty segment) matches no path; paths have one "/" between segments',
    ],
    [
      'interval missing',
      ['groups: [acme]', RULE],
      `policies.yml:4:5 policies[0].interval: missing: ${DURATION_PROBLEM}`,
    ],
    [
      'a bad interval',
      ['groups: [acme]', 'interval: often', RULE],
      `policies.yml:7:15 policies[0].interval: ${DURATION_PROBLEM}`,
    ],
    [
      'interval 0s',
      ['groups: [acme]', 'interval: 0s', RULE],
      'policies.yml:7:15 policies[0].interval: must be at least 1s, got 0s',
    ],
    [
      'a bad deny_pending_after',
      [...VALID, RULE, 'deny_pending_after: 1 month'],
      `policies.yml:9:25 policies[0].deny_pending_after: ${DURATION_PROBLEM}`,
    ],
    [
      'a bad min_account_age',
      [...VALID, 'rules: [{ deny: true, when: { min_account_age: old } }]'],
      `policies.yml:8:52 policies[0].rules[0].when.min_account_age: ${DURATION_PROBLEM}`,
    ],
    [
      'an unknown level name',
      [...VALID, 'rules: [{ approve: admin }]'],
      `policies.yml:8:24 policies[0].rules[0].approve: expected an access level: ${LEVELS}`,
    ],
    [
      'level 60',
      [...VALID, 'rules: [{ approve: 60 }]'],
      `policies.yml:8:24 policies[0].rules[0].approve: 60 is not an access level a request can be approved at; expected an access level: ${LEVELS}`,
    ],
    [
      'level 5 (minimal access)',
      [...VALID, 'rules: [{ approve: 5 }]'],
      `policies.yml:8:24 policies[0].rules[0].approve: 5 is not an access level a request can be approved at; expected an access level: ${LEVELS}`,
    ],
    [
      'owner by name when the policy lists projects',
      [
        'groups: [acme]',
        'projects: [acme/api]',
        'interval: 5m',
        'rules:',
        '  - { deny: true, when: { usernames: ["^spam"] } }',
        '  - { approve: owner, when: { email_domains: [acme.com] } }',
      ],
      'policies.yml:11:20 policies[0].rules[1].approve: rule 2 approves as owner, which only groups have, but this policy also lists projects; use maintainer or lower, or a separate policy for the groups',
    ],
    [
      'owner as 50 for projects alone',
      ['projects: [acme/api]', 'interval: 5m', 'rules: [{ approve: 50 }]'],
      'policies.yml:8:24 policies[0].rules[0].approve: rule 1 approves as owner, which only groups have, but this policy also lists projects; use maintainer or lower, or a separate policy for the groups',
    ],
    [
      'a rule with neither approve nor deny',
      [...VALID, 'rules: [{ when: { bot: true } }]'],
      'policies.yml:8:13 policies[0].rules[0]: a rule is either `approve: <level>` or `deny: true`, exactly one of them',
    ],
    [
      'a rule with both',
      [...VALID, 'rules: [{ approve: guest, deny: true }]'],
      'policies.yml:8:13 policies[0].rules[0]: a rule is either `approve: <level>` or `deny: true`, exactly one of them',
    ],
    [
      'deny: false',
      [...VALID, 'rules: [{ deny: false }]'],
      'policies.yml:8:21 policies[0].rules[0].deny: expected true (deny the request); leave the key out otherwise',
    ],
    [
      'a bad RE2 in usernames',
      [...VALID, 'rules: [{ deny: true, when: { usernames: ["(?=spam)"] } }]'],
      'policies.yml:8:47 policies[0].rules[0].when.usernames[0]: invalid RE2 regular expression: RE2 does not support look-ahead `(?=`',
    ],
    [
      'an email domain with @',
      [...VALID, 'rules: [{ approve: guest, when: { email_domains: ["@acme.com"] } }]'],
      'policies.yml:8:55 policies[0].rules[0].when.email_domains[0]: expected a mail domain such as acme.com (without "@" or wildcards), got "@acme.com"',
    ],
    [
      'a wildcard email domain',
      [...VALID, 'rules: [{ approve: guest, when: { email_domains: ["*.acme.com"] } }]'],
      'policies.yml:8:55 policies[0].rules[0].when.email_domains[0]: expected a mail domain such as acme.com (without "@" or wildcards), got "*.acme.com"',
    ],
    [
      'an empty email_domains',
      [...VALID, 'rules: [{ approve: guest, when: { email_domains: [] } }]'],
      'policies.yml:8:54 policies[0].rules[0].when.email_domains: give at least one domain, or leave the key out',
    ],
    [
      'two_factor that is not a boolean',
      [...VALID, 'rules: [{ approve: guest, when: { two_factor: "yes" } }]'],
      'policies.yml:8:51 policies[0].rules[0].when.two_factor: expected true or false (two-factor authentication on or off)',
    ],
    [
      'an unknown state',
      [...VALID, 'rules: [{ deny: true, when: { state: banned } }]'],
      'policies.yml:8:42 policies[0].rules[0].when.state: expected active or blocked',
    ],
    [
      'an approve rule for blocked users',
      [...VALID, 'rules: [{ approve: guest, when: { state: blocked } }]'],
      'policies.yml:8:46 policies[0].rules[0].when.state: rule 1 can never approve: a blocked user is never approved',
    ],
    [
      'an unknown condition, with a suggestion',
      [...VALID, 'rules: [{ approve: guest, when: { email_domain: [acme.com] } }]'],
      'policies.yml:8:39 policies[0].rules[0].when.email_domain: unknown key "email_domain"; did you mean "email_domains"?',
    ],
    // Dropped silently, a misspelt `when` would leave a rule without conditions: one that approves everyone.
    [
      'an unknown key in a rule, with a suggestion',
      [...VALID, 'rules: [{ approve: guest, wehn: { email_domains: [acme.com] } }]'],
      'policies.yml:8:31 policies[0].rules[0].wehn: unknown key "wehn"; did you mean "when"?',
    ],
    [
      'an unknown otherwise',
      [...VALID, RULE, 'otherwise: approve'],
      'policies.yml:9:16 policies[0].otherwise: expected leave or deny',
    ],
    [
      'max_actions_per_run 0',
      [...VALID, RULE, 'max_actions_per_run: 0'],
      'policies.yml:9:26 policies[0].max_actions_per_run: max_actions_per_run must be at least 1',
    ],
    [
      'a policy that would never act',
      [...VALID],
      'policies.yml:4:5 policies[0].rules: missing: this policy would never act: give rules, otherwise: deny, or deny_pending_after',
    ],
    [
      'rules that is not a list',
      [...VALID, 'rules: { approve: guest }'],
      'policies.yml:8:12 policies[0].rules: expected a list of rules such as [{ approve: developer, when: { email_domains: [acme.com] } }]',
    ],
  ])('rejects %s', (_title, lines, problem) => {
    expect(problemsOf(file(...lines))).toEqual([problem]);
  });

  it('reports every problem at once', () => {
    const problems = problemsOf(
      file(
        'projects: [acme/api]',
        'interval: soon',
        'rules:',
        '  - { approve: owner }',
        '  - { deny: true, when: { usernames: ["(x"] } }',
        'otherwise: maybe',
      ),
    );
    expect(problems).toEqual([
      `policies.yml:7:15 policies[0].interval: ${DURATION_PROBLEM}`,
      'policies.yml:9:20 policies[0].rules[0].approve: rule 1 approves as owner, which only groups have, but this policy also lists projects; use maintainer or lower, or a separate policy for the groups',
      'policies.yml:10:43 policies[0].rules[1].when.usernames[0]: invalid RE2 regular expression: missing closing ): `(x`',
      'policies.yml:11:16 policies[0].otherwise: expected leave or deny',
    ]);
  });

  it('describes its fields in the JSON Schema, levels by name among them', () => {
    const schema = JSON.stringify(configJsonSchema([accessRequestsPolicy]));
    expect(schema).toContain('Approves or denies requests to join groups and projects by rules, failing closed');
    expect(schema).toContain('In order: the first rule whose conditions all hold decides.');
    expect(schema).toContain('"maintainer"');
  });
});
