import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const ESLINT = resolve(ROOT, 'node_modules/eslint/bin/eslint.js');

/** The import restrictions ESLint applies to a file at `path` (which need not exist), as `npm run lint` sees them. */
function restrictionsFor(path: string): RegExp[] {
  const config = JSON.parse(execFileSync(process.execPath, [ESLINT, '--print-config', path], { cwd: ROOT, encoding: 'utf8' })) as {
    rules: Record<string, unknown>;
  };
  const rule = config.rules['no-restricted-imports'] as [number, { patterns: Array<{ regex: string }> }] | undefined;
  if (!rule || rule[0] === 0) return [];
  return rule[1].patterns.map((pattern) => new RegExp(pattern.regex));
}

function refused(path: string, specifiers: readonly string[]): string[] {
  const restrictions = restrictionsFor(path);
  return specifiers.filter((specifier) => restrictions.some((restriction) => restriction.test(specifier)));
}

describe('the layers npm run lint enforces', () => {
  it('a policy type imports no other policy type, nor the list, nor the sandbox or test code', () => {
    const specifiers = [
      '../access-requests/access-requests.runner',
      '..',
      '../index',
      '../../policies/key-rotation/secret-file',
      '../../sandbox',
      '../../../test/support/builders/jobs',
      './job-retry.schema',
      '../../engine/policy',
      '../../gitlab',
      '../../config/validators',
    ];
    expect(refused('src/policies/job-retry/new-file.ts', specifiers)).toEqual(specifiers.slice(0, 6));
  });

  it('a file in a subfolder of a policy (a credential kind) is fenced the same, one `../` deeper a level', () => {
    const nested = ['../../../job-retry/job-retry.runner', '../../..', '../../../index', '../../../../sandbox', '../../credential-kind', './ssh-keys.schema', '../../../../engine/policy'];
    expect(refused('src/policies/key-rotation/kinds/ssh-keys/new-file.ts', nested)).toEqual(nested.slice(0, 4));
    const registry = ['../../job-retry/job-retry.runner', '../..', '../credential-kind', './ssh-keys/ssh-keys', '../../../engine/policy'];
    expect(refused('src/policies/key-rotation/kinds/new-file.ts', registry)).toEqual(registry.slice(0, 2));
  });

  it('a policy reaches the disk and child processes through src/effects/, which alone imports them', () => {
    const effects = ['node:fs', 'node:fs/promises', 'fs', 'node:child_process', 'child_process', '../../effects/secret-files', 'node:path', 'node:crypto'];
    expect(refused('src/policies/key-rotation/new-file.ts', effects)).toEqual(effects.slice(0, 5));
    expect(refused('src/policies/key-rotation/kinds/ssh-keys/new-file.ts', ['node:fs/promises', '../../../../effects/hook-runner'])).toEqual(['node:fs/promises']);
    expect(refused('src/effects/new-file.ts', effects)).toEqual([]);
  });

  it('the engine imports no policy', () => {
    expect(refused('src/engine/new-file.ts', ['../policies', '../policies/job-retry/job-retry.runner', './policy', '../gitlab', '../queue/jobs'])).toEqual([
      '../policies',
      '../policies/job-retry/job-retry.runner',
    ]);
  });

  it('only src/redis/ and the engine’s stores import ioredis (and the rate limiter, for its script)', () => {
    for (const path of ['src/cli/new-file.ts', 'src/engine/new-file.ts', 'src/http/new-file.ts', 'src/policies/job-retry/new-file.ts', 'src/queue/new-file.ts', 'src/gitlab/client.ts']) {
      expect([path, refused(path, ['ioredis'])]).toEqual([path, ['ioredis']]);
    }
    for (const path of ['src/redis/new-file.ts', 'src/engine/stores/new-file.ts', 'src/gitlab/transport/rate-limit.ts']) {
      expect([path, refused(path, ['ioredis'])]).toEqual([path, []]);
    }
    // The stores keep the engine's own rule.
    expect(refused('src/engine/stores/new-file.ts', ['../../policies/job-retry/job-retry.runner'])).toEqual(['../../policies/job-retry/job-retry.runner']);
  });

  it('the forge client imports no Nest and no test helpers', () => {
    expect(refused('src/gitlab/transport/new-file.ts', ['@nestjs/common', '@nestjs/core', '../testing/fake-clock', './errors', 'undici'])).toEqual([
      '@nestjs/common',
      '@nestjs/core',
      '../testing/fake-clock',
    ]);
  });

  it('runtime code imports neither the sandbox nor test code; the sandbox command and specs may', () => {
    expect(refused('src/cli/new-file.ts', ['../sandbox', '../../test/support/cli', '../gitlab/testing/records', '../engine/policy'])).toEqual([
      '../sandbox',
      '../../test/support/cli',
      '../gitlab/testing/records',
    ]);
    expect(refused('src/cli/sandbox.ts', ['../sandbox'])).toEqual([]);
    expect(refused('src/engine/new-file.spec.ts', ['../../test/support/cli'])).toEqual([]);
  });
});
