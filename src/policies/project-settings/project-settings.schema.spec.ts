import { parseConfig } from '../../config/load';
import { configJsonSchema } from '../../config/schema';
import { INTEGRATION_PARAMETERS, INTEGRATION_SLUGS } from '../../gitlab/types/integrations';
import { aPolicy } from '../../../test/support/builders/project-settings';
import { DURATION_PROBLEM, policyFiles } from '../../../test/support/schema-spec';
import { projectSettingsPolicy } from './project-settings.schema';
import { branchLevelName } from './protected-branches/protected-branches.schema';

const LEVELS = 'expected an access level: no_access, developer, maintainer or admin, or 0, 30, 40 or 60';

const { file, parse, problemsOf } = policyFiles(projectSettingsPolicy, 'baseline');

const VALID = ['projects: ["acme/**"]', 'interval: 30m'];
const MAIN = 'protected_branches: [{ name: main, push_access_level: maintainer, merge_access_level: developer }]';

describe('project_settings schema', () => {
  it('fills every default', () => {
    const config = parse(file(...VALID, MAIN)).policies[0];
    // Through JSON: the selection is printed back as written.
    expect(JSON.parse(JSON.stringify(config))).toEqual({
      name: 'baseline',
      type: 'project_settings',
      projects: ['acme/**'],
      include_archived: false,
      interval: 1_800_000,
      protected_branches: [{ name: 'main', push_access_level: 40, merge_access_level: 30, allow_force_push: false }],
      prune: false,
      max_actions_per_run: 50,
    });
  });

  it('reads the example of issue 17, the secret from the environment as the file is loaded', () => {
    const text = file(
      'projects: ["acme/**", "!acme/sandbox-*"]',
      'interval: 30m',
      'protected_branches:',
      '  - name: main',
      '    push_access_level: maintainer',
      '    merge_access_level: developer',
      '    allow_force_push: false',
      '    code_owner_approval_required: true',
      '  - name: "release/*"',
      '    push_access_level: no_access',
      '    merge_access_level: maintainer',
      'approvals:',
      '  settings: { reset_approvals_on_push: true, merge_requests_author_approval: false }',
      '  rules:',
      '    - { name: security, approvals_required: 1, group_ids: [42] }',
      'integrations:',
      '  chat-notifications-a:',
      '    webhook: ${CHAT_WEBHOOK_URL}',
      '    notify_only_broken_pipelines: true',
      'prune: false',
    );
    expect(problemsOf(text)).toEqual([
      'policies.yml:23:18 policies[0].integrations.chat-notifications-a.webhook: environment variable CHAT_WEBHOOK_URL is not set (write ${CHAT_WEBHOOK_URL:-default} to give a default)',
    ]);
    const env = { CHAT_WEBHOOK_URL: 'https://chat.example.com/hooks/T0/B0/s3cr3t' };
    const policy = parseConfig(text, 'policies.yml', { policyTypes: [projectSettingsPolicy], env }).policies[0];
    expect(JSON.parse(JSON.stringify(policy))).toEqual({
      name: 'baseline',
      type: 'project_settings',
      projects: ['acme/**', '!acme/sandbox-*'],
      include_archived: false,
      interval: 1_800_000,
      protected_branches: [
        {
          name: 'main',
          push_access_level: 40,
          merge_access_level: 30,
          allow_force_push: false,
          code_owner_approval_required: true,
        },
        { name: 'release/*', push_access_level: 0, merge_access_level: 40, allow_force_push: false },
      ],
      approvals: {
        settings: { reset_approvals_on_push: true, merge_requests_author_approval: false },
        rules: [{ name: 'security', approvals_required: 1, group_ids: [42] }],
      },
      integrations: {
        'chat-notifications-a': {
          webhook: 'https://chat.example.com/hooks/T0/B0/s3cr3t',
          notify_only_broken_pipelines: true,
        },
      },
      prune: false,
      max_actions_per_run: 50,
    });
  });

  it.each<[string | number, number]>([
    ['no_access', 0],
    ['developer', 30],
    ['maintainer', 40],
    ['admin', 60],
    [0, 0],
    [30, 30],
    [40, 40],
    [60, 60],
  ])('takes the level %s as %d', (written, level) => {
    const policy = aPolicy({
      protected_branches: [
        { name: 'main', push_access_level: written, merge_access_level: written, unprotect_access_level: written },
      ],
    });
    expect(policy.protected_branches?.[0]).toMatchObject({
      push_access_level: level,
      merge_access_level: level,
      unprotect_access_level: level,
    });
  });

  it('names the levels in reasons', () => {
    expect([0, 30, 40, 60].map(branchLevelName)).toEqual(['no_access', 'developer', 'maintainer', 'admin']);
  });

  it.each(['main', 'release/*', '*-stable', 'feature/**', 'v1.x', 'hotfix/JIRA-12'])(
    'takes the branch name or wildcard %s',
    (name) => {
      expect(
        aPolicy({ protected_branches: [{ name, push_access_level: 40, merge_access_level: 40 }] })
          .protected_branches?.[0].name,
      ).toBe(name);
    },
  );

  it('takes approvals alone, and integrations alone', () => {
    expect(
      aPolicy({ protected_branches: undefined, approvals: { rules: [{ name: 'security', approvals_required: 0 }] } })
        .approvals?.rules,
    ).toHaveLength(1);
    expect(
      aPolicy({
        protected_branches: undefined,
        integrations: { 'external-wiki': { external_wiki_url: 'https://wiki.acme.com' } },
      }).integrations,
    ).toEqual({
      'external-wiki': { external_wiki_url: 'https://wiki.acme.com' },
    });
  });

  it('takes every slug with its required parameters', () => {
    for (const slug of INTEGRATION_SLUGS) {
      const required = Object.entries(INTEGRATION_PARAMETERS[slug]).filter(([, parameter]) => parameter.required);
      const values = Object.fromEntries(
        required.map(([name, parameter]) => [name, parameter.kind === 'url' ? 'https://example.com/x' : 'value']),
      );
      expect(aPolicy({ integrations: { [slug]: values } }).integrations).toEqual({ [slug]: values });
    }
  });

  it.each<[string, string[], string[]]>([
    [
      'no section',
      [...VALID],
      [
        'policies.yml:4:5 policies[0].protected_branches: missing: give at least one of protected_branches, approvals or integrations: without them the policy holds nothing',
      ],
    ],
    [
      'projects missing',
      ['interval: 30m', MAIN],
      [
        'policies.yml:4:5 policies[0].projects: missing: expected a list of projects such as [acme/api, 42, "acme/tools/*"]',
      ],
    ],
    [
      'a bad interval',
      ['projects: [acme/api]', 'interval: often', MAIN],
      [`policies.yml:7:15 policies[0].interval: ${DURATION_PROBLEM}`],
    ],
    [
      'a duplicate branch name, at the duplicate',
      [
        ...VALID,
        'protected_branches:',
        '  - { name: main, push_access_level: maintainer, merge_access_level: developer }',
        '  - { name: "release/*", push_access_level: 0, merge_access_level: 40 }',
        '  - { name: main, push_access_level: 40, merge_access_level: 30 }',
      ],
      [
        'policies.yml:11:17 policies[0].protected_branches[2].name: duplicate branch name "main" (protected_branches[0] has it already); declare each once',
      ],
    ],
    [
      'an unknown level name',
      [...VALID, 'protected_branches: [{ name: main, push_access_level: owner, merge_access_level: developer }]'],
      [`policies.yml:8:59 policies[0].protected_branches[0].push_access_level: ${LEVELS}, got "owner"`],
    ],
    [
      'a level number the forge does not have',
      [...VALID, 'protected_branches: [{ name: main, push_access_level: 40, merge_access_level: 50 }]'],
      [
        `policies.yml:8:83 policies[0].protected_branches[0].merge_access_level: 50 is not an access level of a protected branch; ${LEVELS}`,
      ],
    ],
    [
      'a level missing',
      [...VALID, 'protected_branches: [{ name: main, push_access_level: 40 }]'],
      [`policies.yml:8:26 policies[0].protected_branches[0].merge_access_level: missing: ${LEVELS}`],
    ],
    [
      'a branch name with a space',
      [...VALID, 'protected_branches: [{ name: "my branch", push_access_level: 40, merge_access_level: 40 }]'],
      [
        'policies.yml:8:34 policies[0].protected_branches[0].name: expected a branch name or a wildcard such as "release/*" (no spaces, "..", "~^:?[\\", not ending in "/" or ".lock"), got "my branch"',
      ],
    ],
    [
      'allow_force_push that is not a boolean',
      [
        ...VALID,
        'protected_branches: [{ name: main, push_access_level: 40, merge_access_level: 40, allow_force_push: sometimes }]',
      ],
      [
        'policies.yml:8:105 policies[0].protected_branches[0].allow_force_push: expected true or false, got "sometimes"',
      ],
    ],
    [
      'an empty branch list',
      [...VALID, 'protected_branches: []'],
      ['policies.yml:8:25 policies[0].protected_branches: give at least one branch, or leave the key out'],
    ],
    [
      'an unknown integration slug, with a suggestion',
      [...VALID, 'integrations:', '  chat-notificatons-a: { webhook: "https://chat.example.com/hooks/x" }'],
      [
        'policies.yml:9:7 policies[0].integrations.chat-notificatons-a: unknown key "chat-notificatons-a"; did you mean "chat-notifications-a"?',
      ],
    ],
    [
      'a parameter the slug does not take',
      [
        ...VALID,
        'integrations:',
        '  external-wiki:',
        '    external_wiki_url: "https://wiki.acme.com"',
        '    push_events: true',
      ],
      [
        'policies.yml:11:9 policies[0].integrations.external-wiki.push_events: unknown key "push_events"; known keys: external_wiki_url',
      ],
    ],
    [
      'a misspelt parameter, which also leaves the required one out',
      [...VALID, 'integrations:', '  chat-notifications-a:', '    webhok: "https://chat.example.com/hooks/x"'],
      [
        'policies.yml:9:7 policies[0].integrations.chat-notifications-a.webhook: missing: chat-notifications-a requires webhook (an http(s) URL)',
        'policies.yml:10:9 policies[0].integrations.chat-notifications-a.webhok: unknown key "webhok"; did you mean "webhook"?',
      ],
    ],
    [
      'a required parameter left out',
      [
        ...VALID,
        'integrations:',
        '  ci-server-a:',
        '    ci_server_url: "https://ci.acme.com"',
        '    build_key: API-MAIN',
        '    username: forgewarden',
      ],
      [
        'policies.yml:9:7 policies[0].integrations.ci-server-a.password: missing: ci-server-a requires password (a string, best written as "${VARIABLE}")',
      ],
    ],
    [
      'a required parameter left empty',
      [...VALID, 'integrations:', '  emails-on-push: { recipients: "" }'],
      [
        'policies.yml:9:37 policies[0].integrations.emails-on-push.recipients: emails-on-push requires recipients: it must not be empty',
      ],
    ],
    [
      'values of the wrong type',
      [
        ...VALID,
        'integrations:',
        '  chat-notifications-a:',
        '    webhook: "https://chat.example.com/hooks/x"',
        '    channel: 5',
        '    notify_only_broken_pipelines: "yes"',
        '    branches_to_be_notified: some',
        '  irc-gateway: { recipients: "#ops", server_port: 6.5 }',
        '  external-wiki: { external_wiki_url: "wiki.acme.com" }',
      ],
      [
        'policies.yml:11:18 policies[0].integrations.chat-notifications-a.channel: expected a string (quote numbers), got 5',
        'policies.yml:12:39 policies[0].integrations.chat-notifications-a.notify_only_broken_pipelines: expected true or false, got "yes"',
        'policies.yml:13:34 policies[0].integrations.chat-notifications-a.branches_to_be_notified: expected one of all, default, protected, default_and_protected, got "some"',
        'policies.yml:14:55 policies[0].integrations.irc-gateway.server_port: expected a whole number, got 6.5',
        'policies.yml:15:43 policies[0].integrations.external-wiki.external_wiki_url: expected an http(s) URL, got "wiki.acme.com"',
      ],
    ],
    [
      'an empty integrations map',
      [...VALID, 'integrations: {}'],
      ['policies.yml:8:19 policies[0].integrations: give at least one integration, or leave the key out'],
    ],
    [
      'approvals without settings or rules',
      [...VALID, 'approvals: {}'],
      ['policies.yml:8:16 policies[0].approvals: give settings, rules or both, or leave approvals out'],
    ],
    [
      'a duplicate rule name and a negative approvals_required',
      [
        ...VALID,
        'approvals:',
        '  rules:',
        '    - { name: security, approvals_required: 1 }',
        '    - { name: security, approvals_required: -1 }',
      ],
      [
        'policies.yml:11:19 policies[0].approvals.rules[1].name: duplicate approval rule name "security" (rules[0] has it already); declare each once',
        'policies.yml:11:49 policies[0].approvals.rules[1].approvals_required: expected a whole number of approvals (0 or more), got -1',
      ],
    ],
    [
      'an approval setting the forge does not have',
      [...VALID, 'approvals:', '  settings: { reset_approvals_on_push: true, require_two_approvers: true }'],
      [
        'policies.yml:9:50 policies[0].approvals.settings.require_two_approvers: unknown key "require_two_approvers"; known keys: approvals_before_merge, reset_approvals_on_push, disable_overriding_approvers_per_merge_request, merge_requests_author_approval, merge_requests_disable_committers_approval, require_password_to_approve',
      ],
    ],
    [
      'user ids that are not ids',
      [...VALID, 'approvals:', '  rules: [{ name: security, approvals_required: 1, user_ids: [alice] }]'],
      [
        'policies.yml:9:67 policies[0].approvals.rules[0].user_ids[0]: expected a user id (a positive whole number), got "alice"',
      ],
    ],
    [
      'max_actions_per_run 0',
      [...VALID, MAIN, 'max_actions_per_run: 0'],
      ['policies.yml:9:26 policies[0].max_actions_per_run: max_actions_per_run must be at least 1'],
    ],
  ])('rejects %s', (_title, lines, problems) => {
    expect(problemsOf(file(...lines))).toEqual(problems);
  });

  it('never shows a secret in a problem, however wrong it is', () => {
    const secret = 'hooks.chat.example.com/T0/B0/s3cr3t-not-a-url';
    const problems = problemsOf(
      file(
        ...VALID,
        'integrations:',
        '  chat-notifications-a:',
        `    webhook: "${secret}"`,
        '  chatops-a: { token: 12345 }',
      ),
    );
    expect(problems).toEqual([
      'policies.yml:10:18 policies[0].integrations.chat-notifications-a.webhook: expected an http(s) URL, got something else (a secret: not shown)',
      'policies.yml:11:27 policies[0].integrations.chatops-a.token: expected a string, best written as "${VARIABLE}", got something else (a secret: not shown)',
    ]);
    expect(problems.join('\n')).not.toContain('s3cr3t');
    expect(problems.join('\n')).not.toContain('12345');
  });

  it('reports every problem at once', () => {
    const problems = problemsOf(
      file(
        ...VALID,
        'protected_branches:',
        '  - { name: main, push_access_level: owner, merge_access_level: 40 }',
        '  - { name: main, push_access_level: 40, merge_access_level: 40 }',
        'integrations: { nope: {} }',
      ),
    );
    expect(problems).toEqual([
      `policies.yml:9:42 policies[0].protected_branches[0].push_access_level: ${LEVELS}, got "owner"`,
      'policies.yml:10:17 policies[0].protected_branches[1].name: duplicate branch name "main" (protected_branches[0] has it already); declare each once',
      expect.stringMatching(/^policies\.yml:11:21 policies\[0\]\.integrations\.nope: unknown key "nope"; /),
    ]);
  });

  it('describes its fields in the JSON Schema, levels and slugs by name among them', () => {
    const schema = JSON.stringify(configJsonSchema([projectSettingsPolicy]));
    expect(schema).toContain(
      'Holds protected branches, approval settings and rules, and integrations to a declared state.',
    );
    expect(schema).toContain('"no_access"');
    expect(schema).toContain('"chat-notifications-a"');
    expect(schema).toContain('A secret: write it as \\"${VARIABLE}\\"; it is never printed.');
  });
});
