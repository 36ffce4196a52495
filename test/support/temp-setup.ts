import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The run's temporary folder: every test, and every command a test starts, makes its folders inside it (TMPDIR is
 * what os.tmpdir() and child processes read), so the teardown counts exactly what this run left behind, whatever
 * else runs on the machine.
 */
export default function tempSetup(): void {
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-test-run-'));
  (globalThis as { __testRunTmp?: { dir: string; before: string | undefined } }).__testRunTmp = {
    dir,
    before: process.env.TMPDIR,
  };
  process.env.TMPDIR = dir;
}
