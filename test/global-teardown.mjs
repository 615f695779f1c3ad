/** After the run: drops the run's databases that its files' drops left running when it ended. */
import { dropRunDatabases } from './run-databases.mjs';

export default async function globalTeardown() {
  const run = Number(process.env.OAUTH_TEST_RUN);
  await dropRunDatabases((of) => of === run);
}
