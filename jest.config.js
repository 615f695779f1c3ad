/** Jest runs the TypeScript sources as ESM through SWC (no type-check: `npm run typecheck` does that). */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['@swc/jest', {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
      module: { type: 'es6' },
    }],
  },
  // Three workers on two cores: the files wait on processes, browsers and the stores as much as
  // they compute, and a third keeps both cores busy through those waits.
  maxWorkers: 3,
  // The longest files first, in a fresh clone too (test/sequencer.mjs).
  testSequencer: '<rootDir>/test/sequencer.mjs',
  testTimeout: 30000,
  // The run's name for its databases and data folders, and what is left of them afterwards (test/run-databases.mjs, test/run-folders.mjs).
  globalSetup: '<rootDir>/test/global-setup.mjs',
  globalTeardown: '<rootDir>/test/global-teardown.mjs',
};
