import { rmSync } from 'node:fs';

/**
 * Removes the run's temporary folder and gives TMPDIR back. The count of what the tests left in it is made before,
 * by test/support/temp-folders-reporter.js, so that a leftover fails the run with its results written.
 */
export default function tempTeardown(): void {
  const run = (globalThis as { __testRunTmp?: { dir: string; before: string | undefined } }).__testRunTmp;
  if (!run) return;
  if (run.before === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = run.before;
  rmSync(run.dir, { recursive: true, force: true });
}
