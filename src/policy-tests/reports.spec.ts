import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { parseWorld } from '../sandbox/world';
import type { Decision } from '../engine/decision';
import { judge } from './judge';
import { junitXml, resultLines, summaryLine } from './reports';
import type { DecidedPass } from './runner';
import type { TestFileResult, TestResult } from './suite';
import type { PolicyTest } from './test-file';

const decision = (action: string, target: string, reason: string): Decision => ({
  action,
  target,
  key: target,
  reason,
  params: {},
});

function aTest(
  name: string,
  expected: PolicyTest['expect']['decisions'],
  fields: Partial<PolicyTest> = {},
): PolicyTest {
  return {
    name,
    at: '/repo/policies.test.yml:4',
    line: 4,
    policy: 'retry <&> "quotes"',
    world: parseWorld({ users: [{ username: 'bot' }] }),
    worldFile: 'inline',
    now: '2025-06-02T12:00:00.000Z',
    occasion: 'command',
    as: 'bot',
    expect: { decisions: expected, noOtherActions: true, notRead: [] },
    ...fields,
  };
}

function result(test: PolicyTest, pass: DecidedPass): TestResult {
  return { test, pass, differences: judge(test, pass), seconds: 0.25 };
}

const decided: DecidedPass = {
  decisions: [decision('retry', 'job 1', 'retry 1 of 2')],
  outcomes: ['would_act'],
  unobserved: [],
  warnings: [],
};

/** Three tests of one file: one passes, one decides otherwise, one whose pass failed. */
const files: TestFileResult[] = [
  {
    file: '/repo/policies.test.yml',
    policyFile: '/repo/policies.yml',
    results: [
      result(aTest('passes', [{ action: 'retry', target: 'job 1', reason: 'retry 1 of 2' }]), decided),
      result(
        aTest('expects <another> reason', [{ action: 'retry', target: 'job 1', reason: 'retry 2 of 2' }]),
        decided,
      ),
      result(aTest('cannot run', []), {
        decisions: [],
        outcomes: [],
        unobserved: [],
        warnings: [],
        error: 'GET user → 401: 401 Unauthorized',
      }),
    ],
  },
];

describe('the JUnit report', () => {
  /**
   * What GitLab's unit test reports read ("Unit test reports", JUnit XML format specification): `testsuites` >
   * `testsuite` (name, time) > `testcase` (classname shown as the suite, name, file, time in seconds), and a failure's
   * or error's content as its details.
   */
  it('is well-formed XML in the shape GitLab reads, with the test names, and each failure with its message and diff', () => {
    const xml = junitXml(files, '/repo');
    expect(XMLValidator.validate(xml)).toBe(true);
    const parsed = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '@',
      alwaysCreateTextNode: true,
      isArray: (name) => ['testsuite', 'testcase'].includes(name),
    }).parse(xml) as {
      testsuites: {
        '@tests': string;
        '@failures': string;
        '@errors': string;
        '@time': string;
        testsuite: Array<
          Record<string, unknown> & { testcase: Array<Record<string, Record<string, string> | string>> }
        >;
      };
    };
    const root = parsed.testsuites;
    expect([root['@tests'], root['@failures'], root['@errors'], root['@time']]).toEqual(['3', '1', '1', '0.750']);
    const [suite] = root.testsuite;
    expect(suite['@name']).toBe('policies.test.yml');
    const cases = suite.testcase.map((testcase) => [
      testcase['@classname'],
      testcase['@name'],
      testcase['@file'],
      testcase['@time'],
    ]);
    expect(cases).toEqual([
      ['retry <&> "quotes"', 'passes', 'policies.test.yml', '0.250'],
      ['retry <&> "quotes"', 'expects <another> reason', 'policies.test.yml', '0.250'],
      ['retry <&> "quotes"', 'cannot run', 'policies.test.yml', '0.250'],
    ]);
    expect(suite.testcase[0].failure).toBeUndefined();
    expect(suite.testcase[1].failure).toEqual({
      '@message': 'different reason for retry job 1: expected: retry 2 of 2 decided:  retry 1 of 2',
      '@type': 'decisions differ',
      '#text': 'different reason for retry job 1:\n  expected: retry 2 of 2\n  decided:  retry 1 of 2',
    });
    expect(suite.testcase[2].error).toMatchObject({
      '@message': 'the pass failed: GET user → 401: 401 Unauthorized',
      '@type': 'pass failed',
    });
  });

  it('leaves out characters XML cannot hold, so a log quoted in a reason never breaks the report', () => {
    const odd = [
      {
        ...files[0],
        results: [result(aTest('odd', [{ action: 'retry', target: 'job 1', reason: 'a\u0000b\u001bc' }]), decided)],
      },
    ];
    const xml = junitXml(odd, '/repo');
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).toContain('expected: abc');
  });
});

describe('the lines for people', () => {
  it('says ok or FAIL with the policy, the name and where the test is, the diff under a failure, and a count', () => {
    expect(files[0].results.flatMap((one) => resultLines(one, '/repo'))).toEqual([
      'ok    retry <&> "quotes": passes  (policies.test.yml:4)',
      'FAIL  retry <&> "quotes": expects <another> reason  (policies.test.yml:4)',
      '      different reason for retry job 1:',
      '        expected: retry 2 of 2',
      '        decided:  retry 1 of 2',
      'FAIL  retry <&> "quotes": cannot run  (policies.test.yml:4)',
      '      the pass failed: GET user → 401: 401 Unauthorized',
    ]);
    expect(summaryLine(files)).toBe('3 tests: 1 passed, 2 failed');
  });
});
