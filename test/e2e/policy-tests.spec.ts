import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { type RunningSandbox, startSandbox } from '../../src/sandbox';
import { childEnv, runCli, startCli, waitUntil } from '../support/cli';

/**
 * `forgewarden test` and `forgewarden record` as a policy repository's CI and an operator run them: the built command
 * on the shipped examples, on a changed expectation, on a broken file, and on a world recorded from a forge.
 */

const ROOT = resolve(__dirname, '../..');
const EXAMPLES = join(ROOT, 'config/examples');
const DEMO_TESTS = join(ROOT, 'config/demo.test.yml');

describe('forgewarden test', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'policy-tests-e2e-'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A copy of an example's test file in the temp folder, pointing at the example's policy file, edited by `edit`. */
  function copied(name: string, edit: (text: string) => string): string {
    const file = join(dir, `${name}.test.yml`);
    const text = readFileSync(join(EXAMPLES, `${name}.test.yml`), 'utf8').replace(
      /^version: 1$/m,
      `version: 1\npolicy_file: ${JSON.stringify(join(EXAMPLES, `${name}.yml`))}`,
    );
    writeFileSync(file, edit(text));
    return file;
  }

  it('passes on the shipped examples of every policy type and the demo, and writes a JUnit report GitLab reads', async () => {
    const junit = join(dir, 'report.xml');
    const result = await runCli(['test', EXAMPLES, DEMO_TESTS, '--junit', junit], childEnv(), 60_000);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    for (const type of [
      'access-requests',
      'group-backup',
      'job-retry',
      'key-rotation',
      'project-settings',
      'registry-cleanup',
    ]) {
      expect(result.stdout).toMatch(new RegExp(`^ok {4}.*\\(config/examples/${type}\\.test\\.yml:\\d+\\)$`, 'm'));
    }
    expect(result.stdout).toMatch(/^17 tests: 17 passed, 0 failed$/m);
    const xml = readFileSync(junit, 'utf8');
    expect(XMLValidator.validate(xml)).toBe(true);
    const report = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(xml) as {
      testsuites: { tests: string; testsuite: Array<{ testcase: unknown[] }> };
    };
    expect(report.testsuites.tests).toBe('17');
    expect(report.testsuites.testsuite).toHaveLength(7);
  });

  it('fails a changed expectation with a diff that names the decision, and says so in the JUnit report', async () => {
    const file = copied('registry-cleanup', (text) =>
      text.replace('reason: delete 3 of 9 tags', 'reason: delete 4 of 9 tags'),
    );
    const junit = join(dir, 'report.xml');
    const result = await runCli(['test', file, '--junit', junit], childEnv(), 30_000);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('FAIL  nightly-image-cleanup: deletes build tags older than 14 days');
    expect(result.stdout).toContain(
      'different reason for bulk_delete acme/api (repository 1):\n        expected: delete 4 of 9 tags\n        decided:  delete 3 of 9 tags',
    );
    expect(result.stdout).toMatch(/^1 test: 0 passed, 1 failed$/m);
    const report = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(
      readFileSync(junit, 'utf8'),
    ) as {
      testsuites: { testsuite: { failures: string; testcase: { classname: string; failure: { message: string } } } };
    };
    expect(report.testsuites.testsuite.failures).toBe('1');
    expect(report.testsuites.testsuite.testcase.classname).toBe('nightly-image-cleanup');
    expect(report.testsuites.testsuite.testcase.failure.message).toBe(
      'different reason for bulk_delete acme/api (repository 1): expected: delete 4 of 9 tags decided:  delete 3 of 9 tags',
    );
  });

  it('says a decision missing, another unexpected, and --json tells tools the same', async () => {
    const file = copied('job-retry', (text) =>
      text
        .replace(
          'action: retry\n          target: acme/api job 1001 (unit)',
          'action: retry\n          target: acme/api job 1002 (lint)',
        )
        .replace(/^ *- \{ action: skip, target: acme\/api job 1002 \(lint\).*\n/m, '')
        .replace('target: acme/api job 1003 (deploy)', 'target: acme/api job 1009 (deploy)'),
    );
    const result = await runCli(['test', file, '--json'], childEnv(), 30_000);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(1);
    const json = JSON.parse(result.stdout) as {
      files: Array<{ tests: Array<{ passed: boolean; differences: Array<{ kind: string; lines: string[] }> }> }>;
    };
    const [first] = json.files[0].tests;
    expect(first.passed).toBe(false);
    expect(first.differences.map((difference) => difference.lines[0])).toEqual([
      'different action for acme/api job 1002 (lint): expected retry, decided skip (skip: log did not match)',
      'missing:    skip acme/api job 1009 (deploy) (skip: stage deploy not matched)',
      'unexpected: retry acme/api job 1001 (unit) (retry 1 of 2: log matched "(?i)connection reset")',
    ]);
  });

  it('exits 2 naming the line of a broken test file, of a broken inline world and of an unknown policy, and runs nothing', async () => {
    const file = copied('access-requests', (text) =>
      text
        .replace(
          '    policy: staff-access\n    now: 2025-06-02T12:00:00Z\n    world:\n      users:',
          '    policy: staff-acces\n    now: 2025-06-02T12:00:00Z\n    world:\n      userz:',
        )
        .replace('no_other_actions: true', 'no_other_action: true'),
    );
    const result = await runCli(['test', file], childEnv(), 30_000);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const line =
      readFileSync(file, 'utf8')
        .split('\n')
        .findIndex((text) => text.includes('no_other_action:')) + 1;
    expect(result.stderr.split('\n').filter((text) => text.startsWith(file))).toEqual([
      `${file}:${line}:7 tests[0].expect.no_other_action: unknown key "no_other_action"; did you mean "no_other_actions"?`,
    ]);
    const fixed = copied('access-requests', (text) =>
      text.replace(
        '    policy: staff-access\n    now: 2025-06-02T12:00:00Z\n    world:\n      users:',
        '    policy: staff-acces\n    now: 2025-06-02T12:00:00Z\n    world:\n      userz:',
      ),
    );
    const second = await runCli(['test', fixed], childEnv(), 30_000);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(
      `${fixed}:5:13 tests[0].policy: ${join(EXAMPLES, 'access-requests.yml')} has no policy "staff-acces"; it has "staff-access"`,
    );
    expect(second.stderr).toMatch(
      new RegExp(`${fixed}:8:7 tests\\[0\\]\\.world\\.userz: unknown key "userz"; did you mean "users"\\?`),
    );
  });
});

describe('forgewarden record', () => {
  let sandbox: RunningSandbox;
  let dir: string;

  beforeEach(async () => {
    sandbox = await startSandbox();
    dir = mkdtempSync(join(tmpdir(), 'policy-record-e2e-'));
  });

  afterEach(async () => {
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('records the demo forge for a policy; the world is served by `sandbox --world`, and the printed test passes on it', async () => {
    const world = join(dir, 'staff.yml');
    const env = childEnv({
      GITLAB_URL: sandbox.url,
      GITLAB_TOKEN: 'glpat-sandbox-admin-token',
      FORGEWARDEN_DEMO_SECRETS: dir,
    });
    const recorded = await runCli(
      ['record', '-c', join(ROOT, 'config/demo.yml'), '--policy', 'staff-access', '-o', world, '--anonymize'],
      env,
      30_000,
    );
    expect(recorded.stderr).toBe('');
    expect(recorded.code).toBe(0);
    expect(recorded.stdout).toMatch(/^recorded 1 projects, 1 groups, 5 users \(\d+ answers\) into /m);
    const text = readFileSync(world, 'utf8');
    expect(text).not.toContain('glpat-sandbox');
    expect(text).not.toContain('Carol Danvers');
    expect(text).toContain('email: user-3@acme.com');
    // Every request the recording sent was a read.
    expect(sandbox.state.requestLog.filter((entry) => entry.method !== 'GET')).toEqual([]);

    const tests = join(dir, 'staff.test.yml');
    const printed = recorded.stdout.slice(recorded.stdout.indexOf('- name:'));
    writeFileSync(
      tests,
      `version: 1\npolicy_file: ${JSON.stringify(join(ROOT, 'config/demo.yml'))}\ntests:\n${printed.replace(/^/gm, '  ')}`,
    );
    const tested = await runCli(['test', tests], childEnv(), 30_000);
    expect(tested.stderr).toBe('');
    expect(tested.stdout).toMatch(/^1 test: 1 passed, 0 failed$/m);
    expect(tested.code).toBe(0);

    const served = startCli(['sandbox', '--port', '0', '--world', world]);
    try {
      await waitUntil('the sandbox serves the recorded world', () => served.stdout.includes('sandbox forge on'));
      expect(served.stdout).toMatch(/world .*staff\.yml: 5 users, 1 groups, 1 projects/);
    } finally {
      await served.stop();
    }
  });
});
