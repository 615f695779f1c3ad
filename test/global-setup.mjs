/**
 * Before the run: names the run (its databases are `oauth_test_r<run>_…`, test/helpers/services.ts)
 * and drops what runs that no longer exist left behind (one killed before its teardown).
 */
import { dropRunDatabases } from './run-databases.mjs';

export default async function globalSetup() {
  process.env.OAUTH_TEST_RUN = String(process.pid);
  await dropRunDatabases((run) => {
    try {
      process.kill(run, 0);
      return false; // a run still going (another checkout's): its databases are its own
    } catch (error) {
      return error.code === 'ESRCH';
    }
  });
}
