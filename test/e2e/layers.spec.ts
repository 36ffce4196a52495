import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const ESLINT = resolve(ROOT, 'node_modules/eslint/bin/eslint.js');

/** The import restrictions ESLint applies to a file at `path` (which need not exist), as `npm run lint` sees them. */
function restrictionsFor(path: string): RegExp[] {
  const config = JSON.parse(
    execFileSync(process.execPath, [ESLINT, '--print-config', path], { cwd: ROOT, encoding: 'utf8' }),
  ) as {
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
      '../access-requests/access-requests.type',
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

  it('a section of a policy imports its policy’s core, never another section nor another policy type', () => {
    const specifiers = [
      '../approvals/approvals.decide',
      '../../job-retry/job-retry.decide',
      '../..',
      '../../index',
      '../../../policies/key-rotation/secret-file',
      '../../../sandbox',
      '../../../../test/support/builders/project-settings',
      '../project-settings.scope',
      './protected-branches.params',
      '../../../engine/policy',
      '../../../gitlab',
    ];
    expect(refused('src/policies/project-settings/protected-branches/new-file.ts', specifiers)).toEqual(
      specifiers.slice(0, 7),
    );
    // The core composes its sections.
    expect(
      refused('src/policies/project-settings/new-file.ts', [
        './approvals/approvals.decide',
        './project-settings.scope',
      ]),
    ).toEqual([]);
  });

  it('a file in a subfolder of a policy (a credential kind) is fenced the same, one `../` deeper a level', () => {
    const nested = [
      '../../../job-retry/job-retry.type',
      '../../..',
      '../../../index',
      '../../../../sandbox',
      '../../credential-kind',
      './ssh-keys.schema',
      '../../../../engine/policy',
    ];
    expect(refused('src/policies/key-rotation/kinds/ssh-keys/new-file.ts', nested)).toEqual(nested.slice(0, 4));
    const registry = [
      '../../job-retry/job-retry.type',
      '../..',
      '../credential-kind',
      './ssh-keys/ssh-keys',
      '../../../engine/policy',
    ];
    expect(refused('src/policies/key-rotation/kinds/new-file.ts', registry)).toEqual(registry.slice(0, 2));
    // A kind builds on the core, never on another kind.
    expect(
      refused('src/policies/key-rotation/kinds/ssh-keys/new-file.ts', ['../deploy-keys/deploy-keys.kind', '../index']),
    ).toEqual(['../deploy-keys/deploy-keys.kind']);
  });

  it('the engine imports no policy', () => {
    expect(
      refused('src/engine/new-file.ts', [
        '../policies',
        '../policies/job-retry/job-retry.type',
        './policy',
        '../gitlab',
        '../queue/jobs',
      ]),
    ).toEqual(['../policies', '../policies/job-retry/job-retry.type']);
  });

  it('only src/redis/ and the engine’s stores import ioredis (and the rate limiter, for its script)', () => {
    for (const path of [
      'src/cli/new-file.ts',
      'src/engine/new-file.ts',
      'src/http/new-file.ts',
      'src/policies/job-retry/new-file.ts',
      'src/queue/new-file.ts',
      'src/gitlab/client.ts',
    ]) {
      expect([path, refused(path, ['ioredis'])]).toEqual([path, ['ioredis']]);
    }
    for (const path of [
      'src/redis/new-file.ts',
      'src/engine/stores/new-file.ts',
      'src/gitlab/transport/rate-limit.ts',
    ]) {
      expect([path, refused(path, ['ioredis'])]).toEqual([path, []]);
    }
    // The stores keep the engine's own rule.
    expect(refused('src/engine/stores/new-file.ts', ['../../policies/job-retry/job-retry.type'])).toEqual([
      '../../policies/job-retry/job-retry.type',
    ]);
  });

  it('the forge client imports no Nest and no test helpers', () => {
    expect(
      refused('src/gitlab/transport/new-file.ts', [
        '@nestjs/common',
        '@nestjs/core',
        '../testing/fake-clock',
        './errors',
        'undici',
      ]),
    ).toEqual(['@nestjs/common', '@nestjs/core', '../testing/fake-clock']);
  });

  it('runtime code imports neither the sandbox nor test code; the sandbox command and specs may', () => {
    expect(
      refused('src/cli/new-file.ts', [
        '../sandbox',
        '../../test/support/cli',
        '../gitlab/testing/records',
        '../engine/policy',
      ]),
    ).toEqual(['../sandbox', '../../test/support/cli', '../gitlab/testing/records']);
    expect(refused('src/cli/sandbox.ts', ['../sandbox'])).toEqual([]);
    expect(refused('src/engine/new-file.spec.ts', ['../../test/support/cli'])).toEqual([]);
    // A policy test serves its world from a sandbox in the same process; test code and Redis stay out.
    expect(refused('src/policy-tests/new-file.ts', ['../sandbox', '../../test/support/cli', 'ioredis'])).toEqual([
      '../../test/support/cli',
      'ioredis',
    ]);
  });

  it('the restore imports no command (the command imports it), nor ioredis, the sandbox or test code', () => {
    const specifiers = [
      '../cli/table',
      './cli',
      'ioredis',
      '../sandbox',
      '../../test/support/cli',
      '../policies/group-backup/group-backup.set',
      '../engine/forge-turn',
      './set-plan',
    ];
    expect(refused('src/restore/new-file.ts', specifiers)).toEqual(specifiers.slice(0, 5));
    expect(refused('src/cli/new-file.ts', ['../restore/set-restore'])).toEqual([]);
  });
});

describe('no policy reaches the disk or processes but through src/effects/', () => {
  const planted = {
    'a static import':
      "import { readFile } from 'node:fs/promises';\nexport const read = (path: string): Promise<string> => readFile(path, 'utf8');\n",
    'the bare name': "import { existsSync } from 'fs';\nexport const here = existsSync('x');\n",
    'child processes': "import { execFile } from 'node:child_process';\nexport const run = execFile;\n",
    'a dynamic import': "export async function load(): Promise<unknown> {\n  return import('node:fs');\n}\n",
  };
  const fenced = [
    'src/policies/group-backup/planted.ts',
    'src/policies/job-retry/planted.ts',
    'src/policies/key-rotation/kinds/planted.ts',
    'src/restore/planted.ts',
  ];
  const free = ['src/effects/planted.ts', 'src/engine/planted.ts', 'src/policies/group-backup/planted.spec.ts'];
  const files = [
    ...Object.values(planted).flatMap((code) => fenced.map((path) => ({ path, code }))),
    ...free.map((path) => ({ path, code: planted['child processes'] })),
  ];
  let found: Map<string, string[]>;

  // One lint of every planted file: the type-aware parser takes a while to start.
  beforeAll(() => {
    const refusals = refusalsOf(files);
    found = new Map(files.map((file, index) => [`${file.path} ${file.code}`, refusals[index] ?? []]));
  }, 180_000);

  it.each(Object.entries(planted))('refuses %s in a policy and in the restore', (_what, code) => {
    for (const path of fenced) {
      expect([path, found.get(`${path} ${code}`)]).toEqual([
        path,
        [expect.stringMatching(/^(@typescript-eslint\/no-restricted-imports|no-restricted-syntax): .*src\/effects\//)],
      ]);
    }
  });

  it('lets the effects themselves, the engine and specs (which set up their temp folders) use them', () => {
    for (const path of free) expect([path, found.get(`${path} ${planted['child processes']}`)]).toEqual([path, []]);
  });
});

/**
 * What `npm run lint`'s configuration says of files planted at these paths with this content: each as `rule: message`.
 * They are never written to disk (nothing else in the tree sees them), so the type-aware parser is told to take them
 * as they are. ESLint loads its configuration as a module, which jest cannot: it runs in a node of its own.
 */
function refusalsOf(files: ReadonlyArray<{ path: string; code: string }>): string[][] {
  const script = `
    import { ESLint } from 'eslint';
    const files = JSON.parse(process.argv[1]);
    const eslint = new ESLint({ overrideConfig: { languageOptions: { parserOptions: {
      projectService: { allowDefaultProject: ['src/*/planted*.ts', 'src/*/*/planted*.ts', 'src/*/*/*/planted*.ts'], defaultProject: 'tsconfig.json' },
    } } } });
    const found = [];
    for (const { path, code } of files) {
      const [result] = await eslint.lintText(code, { filePath: path });
      found.push(result.messages.map((message) => (message.ruleId ?? 'parse') + ': ' + message.message));
    }
    process.stdout.write(JSON.stringify(found));
  `;
  return JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(files)], {
      cwd: ROOT,
      encoding: 'utf8',
    }),
  ) as string[][];
}
