import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

// Registered as the test file loads this module: after its last test, its folders go (the run counts what is left).
if (typeof afterAll === 'function') {
  afterAll(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
}

/** A new temporary folder `forgewarden-NAME-XXXXXX`, removed with all it holds after the test file's tests. */
export function tempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `forgewarden-${name}-`));
  made.push(dir);
  return dir;
}
