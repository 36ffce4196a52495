import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';

/**
 * The layers, enforced rather than kept by discipline (see ../shared/design.md): a policy type imports no other policy
 * type nor the list of them; the engine imports no policy; runtime code imports neither the sandbox nor test code;
 * the forge's client (`src/gitlab/`) is plain classes, without Nest. `regex` is matched against the import as written.
 */
const POLICY_FOLDERS = readdirSync(new URL('./src/policies/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

/** How deep a policy's own folders nest: files of `src/policies/<type>/`, of its subfolders, and theirs. */
const POLICY_DEPTHS = [0, 1, 2, 3];

const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

/** Runtime code: everything in src/ but the sandbox, test helpers and specs. */
const RUNTIME_IGNORES = ['**/*.spec.ts', 'src/sandbox/**', 'src/gitlab/testing/**', 'src/cli/sandbox.ts'];
const runtime = [
  { regex: '^(\\./|(\\.\\./)+)sandbox(/|$)', message: 'runtime code does not import the sandbox (only the sandbox command does)' },
  { regex: '(^|/)(test|testing)(/|$)', message: 'runtime code does not import test code' },
];

/**
 * Redis is spoken to in two places: src/redis/ (connections, health, the doctor's check) and the engine's stores
 * (src/engine/stores/: one class per record the engine keeps), plus the forge client's shared request budget, whose
 * Lua script lives with the rate limiter. Everything else asks a store.
 */
const noRedis = { regex: '^ioredis$', message: 'only src/redis/ and the engine\'s stores (src/engine/stores/) import ioredis: keep what the engine stores behind a store' };

/**
 * Disk and child processes are reached through the small classes of src/effects/ (SecretFiles, HookRunner), handed to
 * a policy like the forge's client, so its tests use the same classes. group_backup still writes its archives itself.
 */
const noEffects = { regex: '^(node:)?(fs|child_process)(/|$)', message: 'a policy reaches the disk and child processes through the classes of src/effects/' };
const WRITES_DISK_ITSELF = new Set(['group-backup']);

// A file gets one no-restricted-imports setting (the last block that matches it), so each block lists every
// restriction of its files: the runtime ones plus its own.
const engineRule = { regex: '(^|/)policies(/|$)', message: 'the engine is handed the policy types (EngineModule.forRoot); it imports none' };
const gitlabRule = { regex: '^@nestjs/', message: 'the forge client is plain classes: Nest wiring lives in src/forge/' };

const layerRules = [
  { files: ['src/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, noRedis) },
  // A file in a subfolder of its policy (a credential kind, a section) reaches src/policies/ by one more `../` a level.
  ...POLICY_FOLDERS.flatMap((folder) =>
    POLICY_DEPTHS.map((depth) => ({
      files: [`src/policies/${folder}/${'*/'.repeat(depth)}*.ts`],
      ignores: RUNTIME_IGNORES,
      rules: restrict(...runtime, noRedis, ...(WRITES_DISK_ITSELF.has(folder) ? [] : [noEffects]), {
        regex: `^(\\.\\./){${depth + 1}}(?!\\.\\.(/|$)|${folder}/)|^(\\.\\./){${depth}}\\.\\.(/index)?$|/policies(/(?!${folder}/)|$)`,
        message: 'a policy type imports no other policy type, nor the list of them (src/policies/index.ts)',
      }),
    })),
  ),
  { files: ['src/engine/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, noRedis, engineRule) },
  { files: ['src/gitlab/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, noRedis, gitlabRule) },
  // Where Redis may be spoken to: the same rules, without the one about ioredis.
  { files: ['src/redis/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime) },
  { files: ['src/engine/stores/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, engineRule) },
  { files: ['src/gitlab/transport/rate-limit.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, gitlabRule) },
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '**/*.js', '**/*.mjs'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
    },
  },
  ...layerRules,
  {
    files: ['**/*.spec.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
