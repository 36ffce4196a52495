import { relative } from 'node:path';
import { differenceLines } from './judge';
import type { TestFileResult, TestResult } from './suite';

/**
 * How `forgewarden test` tells what it found: one line per test for people (and a diff under a failure), JSON for
 * tools, and JUnit XML in the shape GitLab's unit test reports read (`artifacts:reports:junit`).
 */

/** `ok` or `FAIL`, the policy and the test's name, where it is written; the diff under a failure. */
export function resultLines(result: TestResult, cwd = process.cwd()): string[] {
  const where = shownPath(result.test.at, cwd);
  const head = `${result.differences.length === 0 ? 'ok  ' : 'FAIL'}  ${result.test.policy}: ${result.test.name}  (${where})`;
  return [head, ...result.differences.flatMap(differenceLines).map((line) => `      ${line}`)];
}

export function summaryLine(files: readonly TestFileResult[]): string {
  const all = files.flatMap((file) => file.results);
  const failed = all.filter((result) => result.differences.length > 0).length;
  return `${all.length} test${all.length === 1 ? '' : 's'}: ${all.length - failed} passed, ${failed} failed`;
}

/** For tools: every test with what it expected, what the pass decided and how they differ. */
export function resultsJson(files: readonly TestFileResult[]): unknown {
  return {
    files: files.map((file) => ({
      file: file.file,
      policy_file: file.policyFile,
      tests: file.results.map(({ test, pass, differences, seconds }) => ({
        name: test.name,
        at: test.at,
        policy: test.policy,
        world: test.worldFile,
        now: test.now,
        passed: differences.length === 0,
        seconds: Number(seconds.toFixed(3)),
        ...(pass.error !== undefined ? { error: pass.error } : {}),
        decisions: pass.decisions.map((decision, index) => ({
          action: decision.action,
          target: decision.target,
          outcome: pass.outcomes[index],
          reason: decision.reason,
        })),
        ...(pass.unobserved.length > 0 ? { not_read: pass.unobserved } : {}),
        differences: differences.map((difference) => ({ ...difference, lines: differenceLines(difference) })),
      })),
    })),
  };
}

/**
 * JUnit XML as GitLab reads it: `testsuites` > one `testsuite` per test file > one `testcase` per test, its
 * `classname` the policy (GitLab shows it as the suite), `name` the test, `file` the test file, `time` in seconds; a
 * failed test holds a `failure` whose `message` is its first difference and whose text is the whole diff, a pass that
 * could not run an `error`.
 */
export function junitXml(files: readonly TestFileResult[], cwd = process.cwd()): string {
  const all = files.flatMap((file) => file.results);
  const count = (results: readonly TestResult[]) => ({
    tests: results.length,
    failures: results.filter((result) => result.differences.length > 0 && result.pass.error === undefined).length,
    errors: results.filter((result) => result.pass.error !== undefined).length,
    time: results.reduce((sum, result) => sum + result.seconds, 0),
  });
  const totals = count(all);
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', `<testsuites name="forgewarden test"${counts(totals)}>`];
  for (const file of files) {
    const name = shownPath(file.file, cwd);
    lines.push(`  <testsuite name="${escape(name)}"${counts(count(file.results))}>`);
    for (const result of file.results) {
      const attributes = `classname="${escape(result.test.policy)}" name="${escape(result.test.name)}" file="${escape(name)}" time="${result.seconds.toFixed(3)}"`;
      if (result.differences.length === 0) {
        lines.push(`    <testcase ${attributes}/>`);
        continue;
      }
      const diff = result.differences.flatMap(differenceLines);
      // The first difference on one line: GitLab lists it beside the test's name.
      const message = differenceLines(result.differences[0])
        .map((line) => line.trim())
        .join(' ');
      const element = result.pass.error !== undefined ? 'error' : 'failure';
      lines.push(`    <testcase ${attributes}>`);
      lines.push(
        `      <${element} message="${escape(message)}" type="${element === 'error' ? 'pass failed' : 'decisions differ'}">${escape(diff.join('\n'), 'text')}</${element}>`,
      );
      lines.push('    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>', '');
  return lines.join('\n');
}

/** Relative to the working folder when below it, else as given. */
function shownPath(path: string, cwd: string): string {
  const shown = relative(cwd, path);
  return shown === '' || shown.startsWith('..') ? path : shown;
}

function counts(totals: { tests: number; failures: number; errors: number; time: number }): string {
  return ` tests="${totals.tests}" failures="${totals.failures}" errors="${totals.errors}" time="${totals.time.toFixed(3)}"`;
}

/** Text for an attribute (the default) or element content; characters XML 1.0 cannot hold at all are left out. */
function escape(text: string, within: 'attribute' | 'text' = 'attribute'): string {
  const escaped = text
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
  // A line break in an attribute would be read back as a space.
  return within === 'attribute' ? escaped.replace(/\n/g, '&#10;') : escaped;
}
