// @ts-check
const { readdirSync } = require('node:fs');

/**
 * Counts the `forgewarden-*` folders the run's tests left in the run's temporary folder (test/support/temp-setup.ts)
 * and fails the run if there are any, naming them: each test removes what it makes. A reporter rather than the
 * teardown, so the failure is counted in the results (and in `--json`'s file) instead of losing them.
 */
class TempFoldersReporter {
  onRunComplete(_contexts, results) {
    const run = /** @type {{ __testRunTmp?: { dir: string } }} */ (globalThis).__testRunTmp;
    if (!run) return;
    const left = readdirSync(run.dir)
      .filter((name) => name.startsWith('forgewarden-'))
      .sort();
    if (left.length === 0) {
      process.stdout.write('\ntemporary folders left behind by the tests: 0\n');
      return;
    }
    const message = `the tests left ${left.length} temporary folder${left.length === 1 ? '' : 's'} behind (removed at the end of the run): ${left.join(', ')}`;
    process.stderr.write(`\n${message}\n`);
    results.success = false;
    results.numFailedTests += 1;
    results.numTotalTests += 1;
    results.testResults.push({
      testFilePath: run.dir,
      numFailingTests: 1,
      numPassingTests: 0,
      numPendingTests: 0,
      numTodoTests: 0,
      failureMessage: message,
      perfStats: { start: Date.now(), end: Date.now(), runtime: 0, slow: false },
      snapshot: { added: 0, fileDeleted: false, matched: 0, unchecked: 0, uncheckedKeys: [], unmatched: 0, updated: 0 },
      testResults: [
        {
          ancestorTitles: [],
          title: 'the tests leave no temporary folder behind',
          fullName: 'the tests leave no temporary folder behind',
          status: 'failed',
          failureMessages: [message],
          failureDetails: [],
          duration: 0,
          numPassingAsserts: 0,
          invocations: 1,
          location: null,
        },
      ],
      leaks: false,
      openHandles: [],
      skipped: false,
      displayName: undefined,
    });
  }
}

module.exports = TempFoldersReporter;
