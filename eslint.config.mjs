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

const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

/** Runtime code: everything in src/ but the sandbox, test helpers and specs. */
const RUNTIME_IGNORES = ['**/*.spec.ts', 'src/sandbox/**', 'src/gitlab/testing/**', 'src/cli/sandbox.ts'];
const runtime = [
  { regex: '^(\\./|(\\.\\./)+)sandbox(/|$)', message: 'runtime code does not import the sandbox (only the sandbox command does)' },
  { regex: '(^|/)(test|testing)(/|$)', message: 'runtime code does not import test code' },
];

// A file gets one no-restricted-imports setting (the last block that matches it), so each block lists every
// restriction of its files: the runtime ones plus its own.
const layerRules = [
  { files: ['src/**/*.ts'], ignores: RUNTIME_IGNORES, rules: restrict(...runtime) },
  ...POLICY_FOLDERS.map((folder) => ({
    files: [`src/policies/${folder}/**/*.ts`],
    ignores: RUNTIME_IGNORES,
    rules: restrict(...runtime, {
      regex: `^\\.\\./(?!\\.\\.(/|$)|${folder}/)|^\\.\\.(/index)?$|/policies(/(?!${folder}/)|$)`,
      message: 'a policy type imports no other policy type, nor the list of them (src/policies/index.ts)',
    }),
  })),
  {
    files: ['src/engine/**/*.ts'],
    ignores: RUNTIME_IGNORES,
    rules: restrict(...runtime, { regex: '(^|/)policies(/|$)', message: 'the engine is handed the policy types (EngineModule.forRoot); it imports none' }),
  },
  {
    files: ['src/gitlab/**/*.ts'],
    ignores: RUNTIME_IGNORES,
    rules: restrict(...runtime, { regex: '^@nestjs/', message: 'the forge client is plain classes: Nest wiring lives in src/forge/' }),
  },
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
