import { policyFiles } from '../../../test/support/schema-spec';
import { keyRotationPolicy } from './key-rotation.schema';

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
      deploy_keys: [{ projects: ['acme/api', 7], titles: ['^release'], rotate_after: 90 * 86_400_000, grace: 86_400_000 }],
      on_rotate_env: [],
      max_actions_per_run: 100,
    });
  });

  it('resolves a relative secrets_dir when loading', () => {
    expect(parse(file('interval: 1h', 'secrets_dir: keys', SSH)).policies[0].secrets_dir).toBe(`${process.cwd()}/keys`);
  });

  it.each<[string, string[], string]>([
    ['neither ssh_keys nor deploy_keys', ['interval: 1h', 'secrets_dir: /k'], 'policies.yml:4:5 policies[0].ssh_keys: missing: this policy would never act: give ssh_keys, deploy_keys or both'],
    ['an unknown key type', ['interval: 1h', 'secrets_dir: /k', 'key_type: dsa', SSH], 'policies.yml:8:15 policies[0].key_type: expected ed25519, rsa or ecdsa'],
    [
      'a lifetime shorter than rotate_before',
      ['interval: 1h', 'secrets_dir: /k', 'ssh_keys: [{ user: self, titles: ["x"], rotate_before: 14d, lifetime: 7d, grace: 1d }]'],
      'policies.yml:8:75 policies[0].ssh_keys[0].lifetime: lifetime must be longer than rotate_before, or every new key would be rotated at once',
    ],
    ['secrets_dir missing', ['interval: 1h', SSH], 'policies.yml:4:5 policies[0].secrets_dir: missing: expected the directory the private keys are written to'],
    ['interval 0s', ['interval: 0s', 'secrets_dir: /k', SSH], 'policies.yml:6:15 policies[0].interval: must be at least 1s, got 0s'],
    [
      'rotate_after 0s, which would rotate every deploy key on every pass',
      ['interval: 1h', 'secrets_dir: /k', 'deploy_keys: [{ projects: [acme/api], titles: ["^release"], rotate_after: 0s, grace: 0s }]'],
      'policies.yml:8:79 policies[0].deploy_keys[0].rotate_after: must be at least 1s, got 0s',
    ],
  ])('rejects %s', (_title, lines, problem) => {
    expect(problemsOf(file(...lines))).toEqual([problem]);
  });
});
