/**
 * Three tiers, one run: `npm test` runs them all. Unit specs sit beside their source and need no build, no Redis and no
 * server (`npm run test:unit`); integration tests run the real Nest graph against the sandbox over HTTP and a real Redis
 * (`npm run test:integration`); end-to-end tests run the built command as a user would (`npm run test:e2e`).
 * Every run keeps its temporary folders in one of its own, and fails if a test left one behind (test/support/temp-*.ts).
 */
const shared = {
  testEnvironment: 'node',
  testMatch: ['**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }],
  },
};
const redis = {
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

module.exports = {
  projects: [
    { ...shared, displayName: 'unit', roots: ['<rootDir>/src'] },
    { ...shared, ...redis, displayName: 'integration', roots: ['<rootDir>/test/integration', '<rootDir>/test/chaos'] },
    { ...shared, ...redis, displayName: 'e2e', roots: ['<rootDir>/test/e2e'] },
  ],
  globalSetup: '<rootDir>/test/support/temp-setup.ts',
  globalTeardown: '<rootDir>/test/support/temp-teardown.ts',
  reporters: ['default', '<rootDir>/test/support/temp-folders-reporter.js'],
  maxWorkers: 2,
  testTimeout: 30000,
};
