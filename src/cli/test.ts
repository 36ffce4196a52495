import { writeFileSync } from 'node:fs';
import { junitXml, resultLines, resultsJson, summaryLine } from '../policy-tests/reports';
import { loadTestFiles, runTestFiles, testFilesIn } from '../policy-tests/suite';
import { testFileOf } from '../policy-tests/test-file';
import { configPath, EXIT_INVALID_CONFIG } from './config-file';

/** A test decided otherwise than it expects. */
export const EXIT_TEST_FAILED = 1;

/**
 * Runs policy test files: those named (a folder: every *.test.yml in it), else the one beside the policy file
 * (`-c`, FORGEWARDEN_CONFIG or config/policies.yml). A broken test, world or policy file is said as FILE:LINE:COL
 * before any test runs (exit 2); then one line per test, a diff under each failure, and exit 1 when one failed.
 */
export async function testCommand(
  paths: readonly string[],
  options: { config?: string; junit?: string; json?: boolean },
): Promise<number> {
  const found = testFilesIn(paths.length > 0 ? paths : [testFileOf(configPath(options.config))]);
  const loaded = found.problems.length > 0 ? { problems: found.problems } : loadTestFiles(found.files);
  if ('problems' in loaded) {
    process.stderr.write(
      `${loaded.problems.join('\n')}\nforgewarden test: ${loaded.problems.length} problem${loaded.problems.length === 1 ? '' : 's'}; no test was run\n`,
    );
    return EXIT_INVALID_CONFIG;
  }
  const results = await runTestFiles(loaded.loaded, (result) => {
    if (!options.json) process.stdout.write(`${resultLines(result).join('\n')}\n`);
  });
  if (options.junit !== undefined) writeFileSync(options.junit, junitXml(results));
  process.stdout.write(
    options.json ? `${JSON.stringify(resultsJson(results), null, 2)}\n` : `${summaryLine(results)}\n`,
  );
  return results.some((file) => file.results.some((result) => result.differences.length > 0)) ? EXIT_TEST_FAILED : 0;
}
