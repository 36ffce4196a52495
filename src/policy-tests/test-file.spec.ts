import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPoliciesWithStandIns } from '../config/load';
import { ConfigError } from '../config/problems';
import { POLICY_TYPES } from '../policies';
import { defaultPolicyFile, loadTestFile, testFileJsonSchema, testFileOf } from './test-file';

describe('test files', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'test-file-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, lines: readonly string[]): string => {
    const file = join(dir, name);
    writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  };
  const policies = (): string =>
    write('policies.yml', [
      'version: 1',
      'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
      'policies:',
      '  - name: retry',
      '    type: job_retry',
      '    projects: [acme/api]',
      '    interval: ${RETRY_INTERVAL:-1m}',
      '    max_retries: ${MAX_RETRIES}',
    ]);
  const load = (file: string) =>
    loadTestFile(file, (policyFile, env) =>
      loadPoliciesWithStandIns(policyFile, {
        policyTypes: POLICY_TYPES,
        env,
        standIn: (name) => `stand-in-for-${name}`,
      }),
    );
  const problems = (file: string): string[] => {
    try {
      load(file);
    } catch (error) {
      if (error instanceof ConfigError) return error.message.split('\n');
      throw error;
    }
    throw new Error('expected problems');
  };

  it('names the policy file beside it, and the test file beside a policy file', () => {
    expect(defaultPolicyFile('/repo/config/policies.test.yml')).toBe('/repo/config/policies.yml');
    expect(defaultPolicyFile('/repo/demo.test.yaml')).toBe('/repo/demo.yaml');
    expect(testFileOf('config/policies.yml')).toBe('config/policies.test.yml');
  });

  it("reads the policy file with the test's env, a default where none is given, and a stand-in elsewhere", () => {
    policies();
    const file = write('policies.test.yml', [
      'version: 1',
      'env: { MAX_RETRIES: "3" }',
      'tests:',
      '  - name: one',
      '    policy: retry',
      '    now: 2025-06-02T12:00:00+02:00',
      '    world: { users: [{ username: bot }, { username: root, admin: true }] }',
      '    expect: {}',
    ]);
    const loaded = load(file);
    expect(loaded.policies).toEqual([expect.objectContaining({ name: 'retry', interval: 60_000, max_retries: 3 })]);
    expect(loaded.tests).toEqual([
      expect.objectContaining({
        name: 'one',
        at: `${file}:4`,
        now: '2025-06-02T10:00:00.000Z',
        as: 'root',
        worldFile: 'inline',
      }),
    ]);
    // Without MAX_RETRIES the stand-in is no number: said at the policy file's line.
    const unset = write('unset.test.yml', [
      'version: 1',
      `policy_file: policies.yml`,
      'tests:',
      '  - { name: one, policy: retry, now: 2025-06-02T12:00:00Z, world: { users: [{ username: bot }] }, expect: {} }',
    ]);
    expect(problems(unset)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${dir}/policies.yml:8:18 policies\\[0\\]\\.max_retries: .*a variable the test does not set stands in here`,
        ),
      ),
    ]);
  });

  it('needs a time, a user for the token, a policy of the file, and names a world file’s problems at its own lines', () => {
    policies();
    write('world.yml', ['users:', '  - username: bot', '    tokenz: [x]']);
    const file = write('policies.test.yml', [
      'version: 1',
      'env: { MAX_RETRIES: "3" }',
      'tests:',
      '  - { name: no time, policy: retry, world: { users: [{ username: bot }] }, expect: {} }',
      '  - { name: nobody, policy: retry, now: 2025-06-02T12:00:00Z, world: {}, expect: {} }',
      '  - { name: stranger, policy: retry, as: eve, now: 2025-06-02T12:00:00Z, world: { users: [{ username: bot }] }, expect: {} }',
      '  - { name: typo, policy: retyr, now: 2025-06-02T12:00:00Z, world: world.yml, expect: {} }',
    ]);
    expect(problems(file)).toEqual([
      `${file}:4:5 tests[0].now: missing: when the pass runs (an ISO 8601 time); the world has no \`now\` either, and a test must decide the same on every day`,
      `${file}:5:70 tests[1].world: the world has no users, and the policy's token must belong to one`,
      `${file}:6:42 tests[2].as: the world has no user "eve"`,
      `${file}:7:27 tests[3].policy: ${dir}/policies.yml has no policy "retyr"; it has "retry"`,
      `${dir}/world.yml:3:5 users[0].tokenz: unknown key "tokenz"; did you mean "tokens"?`,
    ]);
  });

  it('has a JSON Schema for editors, the world inline in the sandbox’s format', () => {
    const schema = JSON.stringify(testFileJsonSchema());
    expect(schema).toContain('"no_other_actions"');
    expect(schema).toContain('"reason_matches"');
    expect(schema).toContain('"deploy_keys"');
  });
});
