/** After the run: drops the run's databases that its files' drops left running when it ended, and removes its folders. */
import { dropRunDatabases } from './run-databases.mjs';
import { removeRunFolders } from './run-folders.mjs';

export default async function globalTeardown() {
  const run = Number(process.env.OAUTH_TEST_RUN);
  removeRunFolders((of) => of === run);
  await dropRunDatabases((of) => of === run);
}
