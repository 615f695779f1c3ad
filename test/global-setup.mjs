/**
 * Before the run: names the run (its databases are `oauth_test_r<run>_…`, its folders
 * `oauth-r<run>-…`: test/helpers/services.ts) and removes what runs that no longer exist left
 * behind (one killed before its teardown).
 */
import { dropRunDatabases } from './run-databases.mjs';
import { removeRunFolders } from './run-folders.mjs';

/** Whether run `run` (a process id) has ended: a run still going (another checkout's) keeps its own. */
function ended(run) {
  try {
    process.kill(run, 0);
    return false;
  } catch (error) {
    return error.code === 'ESRCH';
  }
}

export default async function globalSetup() {
  process.env.OAUTH_TEST_RUN = String(process.pid);
  removeRunFolders(ended);
  await dropRunDatabases(ended);
}
