import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';

/**
 * The layers, enforced rather than kept by discipline (docs/architecture.md, "The rooms"): a policy type imports no
 * other policy type nor the list of them; the engine imports no policy; runtime code imports neither the sandbox nor
 * test code; the forge's client (`src/gitlab/`) is plain classes, without Nest. `regex` is matched against the import
 * as written.
 */
const POLICY_FOLDERS = readdirSync(new URL('./src/policies/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

/** Runtime code: everything in src/ but the sandbox, test helpers and specs. */
const RUNTIME_IGNORES = ['**/*.spec.ts', 'src/sandbox/**', 'src/gitlab/testing/**', 'src/cli/sandbox.ts'];
const runtime = [
  {
    regex: '^(\\./|(\\.\\./)+)sandbox(/|$)',
    message: 'runtime code does not import the sandbox (only the sandbox command does)',
  },
  { regex: '(^|/)(test|testing)(/|$)', message: 'runtime code does not import test code' },
];

/**
 * Redis is spoken to in two places: src/redis/ (connections, health, the doctor's check) and the engine's stores
 * (src/engine/stores/: one class per record the engine keeps), plus the forge client's shared request budget, whose
 * Lua script lives with the rate limiter. Everything else asks a store.
 */
const noRedis = {
  regex: '^ioredis$',
  message:
    "only src/redis/ and the engine's stores (src/engine/stores/) import ioredis: keep what the engine stores behind a store",
};

/** How deep a file may sit in its policy's folder: a section, a credential kind, a kind's own folder. */
const POLICY_DEPTHS = [0, 1, 2, 3];

/** A policy type imports no other policy type nor the list of them; a file `depth` folders down climbs one more `../`. */
const otherPolicies = (folder, depth) => ({
  regex: `^(\\.\\./){${depth + 1}}(?!\\.\\.(/|$)|${folder}/)|^(\\.\\./){${depth}}\\.\\.(/index)?$|/policies(/(?!${folder}/)|$)`,
  message: 'a policy type imports no other policy type, nor the list of them (src/policies/index.ts)',
});

/** A section (project-settings/approvals/) or a credential kind (key-rotation/kinds/ssh-keys/) builds on its core only. */
const otherSections = {
  regex: '^\\.\\./[^./][^/]*/',
  message:
    "a section or kind of a policy imports its policy's core, never a sibling: what two of them share lives in the core",
};

// A file gets one no-restricted-imports setting (the last block that matches it), so each block lists every
// restriction of its files: the runtime ones plus its own.
const engineRule = {
  regex: '(^|/)policies(/|$)',
  message: 'the engine is handed the policy types (EngineModule.forRoot); it imports none',
};
const gitlabRule = {
  regex: '^@nestjs/',
  message: 'the forge client is plain classes: Nest wiring lives in src/forge/',
};
const restoreRule = {
  regex: '(^|/)cli(/|$)',
  message: 'the restore is a workflow the restore command runs and prints: it imports no command',
};

const layerRules = [
  { files: ['src/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, noRedis) },
  ...POLICY_FOLDERS.flatMap((folder) =>
    POLICY_DEPTHS.map((depth) => ({
      files: [`src/policies/${folder}/${'*/'.repeat(depth)}*.ts`],
      ignores: RUNTIME_IGNORES,
      rules: restrict(...runtime, noRedis, otherPolicies(folder, depth), ...(depth > 0 ? [otherSections] : [])),
    })),
  ),
  { files: ['src/engine/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, noRedis, engineRule) },
  // Policy tests serve each test's world from a sandbox in the same process, and record worlds in its format.
  { files: ['src/policy-tests/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(runtime[1], noRedis) },
  { files: ['src/gitlab/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, noRedis, gitlabRule) },
  // Where Redis may be spoken to: the same rules, without the one about ioredis.
  { files: ['src/redis/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime) },
  { files: ['src/engine/stores/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, engineRule) },
  { files: ['src/gitlab/transport/rate-limit.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, gitlabRule) },
  { files: ['src/restore/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime, noRedis, restoreRule) },
];

/**
 * The disk and child processes reach a policy through the injected classes of src/effects/ (its context's `files`), as
 * the forge reaches it through the client: no policy, nor the restore, imports them itself. A rule of its own (the
 * TypeScript variant of no-restricted-imports), so it adds to the layer rules instead of replacing them.
 */
const EFFECT_MODULES = ['fs', 'fs/promises', 'child_process'].flatMap((name) => [name, `node:${name}`]);
const EFFECTS_MESSAGE =
  'the disk and processes reach a policy through the injected classes of src/effects/ (LocalFiles, SecretFiles, HookRunner): see docs/architecture.md';
// esquery ends a regular expression at its first slash: `.` stands for the one in fs/promises.
const EFFECTS_PATTERN = '^(node:)?(fs|fs.promises|child_process)$';
const effectsFence = {
  files: ['src/policies/**/*.ts', 'src/restore/**/*.ts'],
  ignores: RUNTIME_IGNORES,
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      { paths: EFFECT_MODULES.map((name) => ({ name, message: EFFECTS_MESSAGE })) },
    ],
    // The same modules loaded at run time.
    'no-restricted-syntax': [
      'error',
      { selector: `ImportExpression[source.value=/${EFFECTS_PATTERN}/]`, message: EFFECTS_MESSAGE },
      {
        selector: `CallExpression[callee.name='require'][arguments.0.value=/${EFFECTS_PATTERN}/]`,
        message: EFFECTS_MESSAGE,
      },
    ],
  },
};

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
  effectsFence,
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
