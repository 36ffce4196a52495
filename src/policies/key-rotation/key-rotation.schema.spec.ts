import { policyFiles } from '../../../test/support/schema-spec';
import { type KeyRotationConfig, keyRotationPolicy } from './key-rotation.schema';

const SSH = 'ssh_keys: [{ user: self, titles: ["^ci"], rotate_before: 14d, lifetime: 90d, grace: 1d }]';

const { file, parse, problemsOf } = policyFiles(keyRotationPolicy, 'rotate');

describe('key_rotation schema', () => {
  it('fills every default and reads durations, users and titles', () => {
    const config = parse(
      file(
        'interval: 1h',
        'secrets_dir: /var/lib/forgewarden/keys',
        'ssh_keys:',
        '  - { user: self, titles: ["^ci"], rotate_before: 14d, lifetime: 90d, grace: 1d }',
        '  - { user: "42", titles: ["."], rotate_before: 1d, lifetime: 2d, grace: 1h }',
        '  - { user: alice, titles: ["."], rotate_before: 1d, lifetime: 2d, grace: 1h }',
        'deploy_keys: [{ projects: [acme/api, 7], titles: ["^release"], rotate_after: 90d, grace: 1d }]',
      ),
    ).policies[0];
    expect(JSON.parse(JSON.stringify(config))).toEqual({
      name: 'rotate',
      type: 'key_rotation',
      interval: 3_600_000,
      secrets_dir: '/var/lib/forgewarden/keys',
      key_type: 'ed25519',
      ssh_keys: [
        { user: 'self', titles: ['^ci'], rotate_before: 14 * 86_400_000, lifetime: 90 * 86_400_000, grace: 86_400_000 },
        { user: 42, titles: ['.'], rotate_before: 86_400_000, lifetime: 2 * 86_400_000, grace: 3_600_000 },
        { user: 'alice', titles: ['.'], rotate_before: 86_400_000, lifetime: 2 * 86_400_000, grace: 3_600_000 },
      ],
      deploy_keys: [
        {
          projects: ['acme/api', 7],
          include_archived: false,
          titles: ['^release'],
          rotate_after: 90 * 86_400_000,
          grace: 86_400_000,
        },
      ],
      on_rotate_env: [],
      project_access_tokens: [],
      group_access_tokens: [],
      deploy_tokens: [],
      personal_access_tokens: [],
      max_actions_per_run: 100,
    });
  });

  it('resolves a relative secrets_dir when loading', () => {
    expect(parse(file('interval: 1h', 'secrets_dir: keys', SSH)).policies[0].secrets_dir).toBe(`${process.cwd()}/keys`);
  });

  it.each<[string, string[], string]>([
    [
      'neither ssh_keys nor deploy_keys',
      ['interval: 1h', 'secrets_dir: /k'],
      'policies.yml:4:5 policies[0].ssh_keys: missing: this policy would never act: give ssh_keys, deploy_keys, project_access_tokens, group_access_tokens, deploy_tokens, personal_access_tokens or several',
    ],
    [
      'an unknown key type',
      ['interval: 1h', 'secrets_dir: /k', 'key_type: dsa', SSH],
      'policies.yml:8:15 policies[0].key_type: expected ed25519, rsa or ecdsa',
    ],
    [
      'a lifetime shorter than rotate_before',
      [
        'interval: 1h',
        'secrets_dir: /k',
        'ssh_keys: [{ user: self, titles: ["x"], rotate_before: 14d, lifetime: 7d, grace: 1d }]',
      ],
      'policies.yml:8:75 policies[0].ssh_keys[0].lifetime: lifetime must be longer than rotate_before, or every new key would be rotated at once',
    ],
    [
      'secrets_dir missing',
      ['interval: 1h', SSH],
      'policies.yml:4:5 policies[0].secrets_dir: missing: expected the directory the private keys are written to',
    ],
    [
      'interval 0s',
      ['interval: 0s', 'secrets_dir: /k', SSH],
      'policies.yml:6:15 policies[0].interval: must be at least 1s, got 0s',
    ],
    [
      'rotate_after 0s, which would rotate every deploy key on every pass',
      [
        'interval: 1h',
        'secrets_dir: /k',
        'deploy_keys: [{ projects: [acme/api], titles: ["^release"], rotate_after: 0s, grace: 0s }]',
      ],
      'policies.yml:8:79 policies[0].deploy_keys[0].rotate_after: must be at least 1s, got 0s',
    ],
    [
      'deploy keys of no project',
      [
        'interval: 1h',
        'secrets_dir: /k',
        'deploy_keys: [{ projects: [], titles: ["^release"], rotate_after: 90d, grace: 1d }]',
      ],
      'policies.yml:8:31 policies[0].deploy_keys[0].projects: give at least one project',
    ],
    [
      'deploy keys of excludes only',
      [
        'interval: 1h',
        'secrets_dir: /k',
        'deploy_keys: [{ projects: ["!acme/legacy-*"], titles: ["^release"], rotate_after: 90d, grace: 1d }]',
      ],
      'policies.yml:8:31 policies[0].deploy_keys[0].projects: every item here excludes, so no project is selected; add what to include, such as "acme/**"',
    ],
    [
      'a glob that does not start with a group path',
      [
        'interval: 1h',
        'secrets_dir: /k',
        'deploy_keys: [{ projects: [acme/api, "*/web"], titles: ["^release"], rotate_after: 90d, grace: 1d }]',
      ],
      'policies.yml:8:42 policies[0].deploy_keys[0].projects[1]: a glob starts with a literal group path such as "acme/": the projects a glob selects are found by listing that group, and "*/web" would have to list every group on the forge',
    ],
    [
      'include_archived that is not a boolean',
      [
        'interval: 1h',
        'secrets_dir: /k',
        'deploy_keys: [{ projects: ["acme/**"], include_archived: "yes", titles: ["^release"], rotate_after: 90d, grace: 1d }]',
      ],
      'policies.yml:8:62 policies[0].deploy_keys[0].include_archived: expected true or false',
    ],
  ])('rejects %s', (_title, lines, problem) => {
    expect(problemsOf(file(...lines))).toEqual([problem]);
  });

  it('takes globs and excludes for deploy keys, each entry with its own include_archived', () => {
    const [policy] = parse(
      file(
        'interval: 1h',
        'secrets_dir: /k',
        'deploy_keys:',
        '  - { projects: [acme/api, "acme/platform/**", "!acme/platform/legacy-*"], include_archived: true, titles: ["^release"], rotate_after: 90d, grace: 1d }',
        '  - { projects: [42], titles: ["^deploy"], rotate_after: 30d, grace: 1h }',
      ),
    ).policies as KeyRotationConfig[];
    const [globbed, listed] = policy.deploy_keys;
    expect(globbed.include_archived).toBe(true);
    expect(globbed.projects.paths).toEqual(['acme/api']);
    expect(globbed.projects.discoveryRoots()).toEqual([{ group: 'acme/platform', includeSubgroups: true }]);
    expect(globbed.projects.matches('acme/platform/tools/web')).toBe(true);
    expect(globbed.projects.excluded('acme/platform/legacy-api')).toBe(true);
    expect(listed.include_archived).toBe(false);
    expect(listed.projects.ids).toEqual([42]);
    expect(listed.projects.globs).toEqual([]);
  });
});
