import { readdirSync, rmSync } from 'node:fs';

/**
 * Counts the `forgewarden-*` folders the run's tests left in its temporary folder, fails the run if there are any
 * (naming them: each test removes what it makes), and removes the run's folder either way.
 */
export default function tempTeardown(): void {
  const run = (globalThis as { __testRunTmp?: { dir: string; before: string | undefined } }).__testRunTmp;
  if (!run) return;
  if (run.before === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = run.before;
  const left = readdirSync(run.dir).filter((name) => name.startsWith('forgewarden-')).sort();
  rmSync(run.dir, { recursive: true, force: true });
  if (left.length > 0) {
    throw new Error(`the tests left ${left.length} temporary folder${left.length === 1 ? '' : 's'} behind (removed now): ${left.join(', ')}`);
  }
  process.stdout.write(`\ntemporary folders left behind by the tests: 0\n`);
}
