/**
 * The order jest's workers take the test files in: the longest first, so that no long file
 * starts last while the other worker has nothing left to do.
 *
 * Jest knows how long each file took on this clone (its cache) after one run; then its own order
 * holds (failed files first, then the longest). A fresh clone has no such record and jest would
 * order by file size, which puts some of the longest files (they wait on processes, not on many
 * lines) near the end. Then the files of LONGEST run first, in its order, and the rest by size.
 * Keep LONGEST to the files that take much longer than their size says; a file missing from it
 * or gone from the suite only costs time, never a test.
 */
import TestSequencer from '@jest/test-sequencer';
import path from 'node:path';

/** Test files (under test/) that take longest, the longest first. */
export const LONGEST = [
  'security/who-may-do-what.test.ts',
  'bench/ab-run.test.ts',
  'bench/run-smoke.test.ts',
  'e2e/account-browser.test.ts',
  'cli.test.ts',
  'store/cleanup.test.ts',
  'http/store-faults.test.ts',
  'ui/account.test.ts',
  'e2e/browser.test.ts',
  'cli/embedded.test.ts',
  'ops/metrics.test.ts',
  'cli/tokens.test.ts',
  'crash-safety.test.ts',
  'persistence.test.ts',
  'ui/applications.test.ts',
  'e2e/logout-browser.test.ts',
  'cli/keys-embedded.test.ts',
  'webhooks/lifecycle-events.test.ts',
  'webhooks/rotation-two-instances.test.ts',
  'http/redis-sentinel.test.ts',
  'ui/login-brute-force.test.ts',
  'shutdown.test.ts',
  'http/fuzz-corpus.test.ts',
  'outbound/host-lookup.test.ts',
  'oidc/signing-key-start.test.ts',
  'store/migrate.test.ts',
  'e2e/browser-app.test.ts',
  'deploy/dockerfile-build.test.ts',
];

const ROOT = path.resolve(import.meta.dirname, '..');
/** Jest's own order (its module is CommonJS). */
const Sequencer = TestSequencer.default ?? TestSequencer;

export default class LongestFirst extends Sequencer {
  sort(tests) {
    if (tests.every((test) => this.time(test) !== undefined)) return super.sort(tests);
    const rank = (test) => {
      const index = LONGEST.indexOf(path.relative(path.join(ROOT, 'test'), test.path));
      return index === -1 ? LONGEST.length : index;
    };
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    return [...tests].sort((a, b) => Number(this.hasFailed(b)) - Number(this.hasFailed(a)) || rank(a) - rank(b) || size(b) - size(a));
  }
}
