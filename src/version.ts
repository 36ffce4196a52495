import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The package's version, read once from the nearest package.json above this file (src/, dist/ or a bench build). */
function readVersion(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    if (dirname(dir) === dir) return '0.0.0';
  }
}

export const VERSION: string = readVersion();
