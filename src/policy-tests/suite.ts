import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadPoliciesWithStandIns } from '../config/load';
import { ConfigError, formatProblem } from '../config/problems';
import { policyType, POLICY_TYPES } from '../policies';
import { type Difference, judge } from './judge';
import { type DecidedPass, runPolicyTest } from './runner';
import { loadTestFile, type PolicyTest, type TestFile } from './test-file';

/** What a test file's tests found, in file order. */
export interface TestFileResult {
  readonly file: string;
  readonly policyFile: string;
  readonly results: readonly TestResult[];
}

export interface TestResult {
  readonly test: PolicyTest;
  readonly pass: DecidedPass;
  /** Empty when the test passed. */
  readonly differences: readonly Difference[];
  /** How long the pass took, for the reports. */
  readonly seconds: number;
}

const TEST_FILE = /\.test\.ya?ml$/i;

/**
 * The test files `paths` name: a file as it is, a folder as every `*.test.yml` (or `.yaml`) below it, sorted. A path
 * that does not exist is a problem of its own (`FILE:1:1 (file): …`), as the loaders say of files they cannot read.
 */
export function testFilesIn(paths: readonly string[]): { files: string[]; problems: string[] } {
  const files: string[] = [];
  const problems: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (TEST_FILE.test(entry.name)) files.push(path);
    }
  };
  for (const path of paths) {
    let folder: boolean;
    try {
      folder = statSync(path).isDirectory();
    } catch {
      problems.push(
        formatProblem({
          file: path,
          line: 1,
          col: 1,
          path: '(file)',
          message: 'cannot read the test file: no such file or folder',
        }),
      );
      continue;
    }
    if (!folder) files.push(path);
    else {
      const before = files.length;
      walk(path);
      if (files.length === before)
        problems.push(
          formatProblem({
            file: path,
            line: 1,
            col: 1,
            path: '(file)',
            message: 'the folder holds no test file (*.test.yml)',
          }),
        );
    }
  }
  return { files, problems };
}

/** Every test file read and checked first, so a broken one is said before any test runs: its problems, or them all. */
export function loadTestFiles(files: readonly string[]): { loaded: TestFile[] } | { problems: string[] } {
  const loaded: TestFile[] = [];
  const problems: string[] = [];
  for (const file of files) {
    try {
      loaded.push(
        loadTestFile(file, (policyFile, env) =>
          loadPoliciesWithStandIns(policyFile, { policyTypes: POLICY_TYPES, env, standIn }),
        ),
      );
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems.map(formatProblem));
    }
  }
  return problems.length > 0 ? { problems } : { loaded };
}

/** What a variable neither the test's `env` nor a default sets stands in as: its name, said as a stand-in. */
export function standIn(name: string): string {
  return `stand-in-for-${name}`;
}

/** Runs every test of the files, one after another; `done` hears of each as it ends. */
export async function runTestFiles(
  files: readonly TestFile[],
  done: (result: TestResult) => void = () => undefined,
): Promise<TestFileResult[]> {
  const results: TestFileResult[] = [];
  for (const file of files) {
    const ofFile: TestResult[] = [];
    for (const test of file.tests) {
      const policy = file.policies.find((candidate) => candidate.name === test.policy);
      const runner = policy && policyType(policy.type);
      // Both were checked when the file was loaded.
      if (!policy || !runner) throw new Error(`${test.at}: policy ${test.policy} is not in ${file.policyFile}`);
      const started = performance.now();
      const pass = await runPolicyTest(test, policy, runner);
      const result = { test, pass, differences: judge(test, pass), seconds: (performance.now() - started) / 1000 };
      ofFile.push(result);
      done(result);
    }
    results.push({ file: file.file, policyFile: file.policyFile, results: ofFile });
  }
  return results;
}
