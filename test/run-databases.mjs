/**
 * The test runs' databases on the machine's Postgres (`oauth_test_r<run pid>_…`), dropped several
 * at a time: a drop waits for a checkpoint of the whole server, and drops that overlap share one.
 */
import pg from 'pg';

const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const WIDTH = 8;

/** Drops every run database whose run (its process id) `whose` picks. */
export async function dropRunDatabases(whose) {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  let names;
  try {
    const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname ~ '^oauth_test_r[0-9]+_'");
    names = rows.map((row) => row.datname).filter((name) => whose(Number(/^oauth_test_r(\d+)_/.exec(name)[1])));
  } finally {
    await client.end();
  }
  const queue = [...names];
  await Promise.all(Array.from({ length: Math.min(WIDTH, queue.length) }, async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      const admin = new pg.Client({ connectionString: ADMIN_URL });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    }
  }));
}
