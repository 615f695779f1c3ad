/**
 * A connection of its own, outside the pool, for what needs a session: migrations hold a
 * session-level advisory lock from their first statement to their last, which a transaction
 * pooler cannot keep (it may hand each statement another server connection). So it goes to
 * DATABASE_DIRECT_URL when set, PostgreSQL itself; otherwise to DATABASE_URL.
 *
 * No statement timeout (neither the pool's nor the role's: pooler.ts): a migration may rightly
 * take longer than a request's statement, and waits for another instance's advisory lock.
 * Connecting is still bounded.
 *
 * @example await withSession(pg, directUrl, 2000, (sql) => migrate(sql));
 */
import type pg from 'pg';
import type { SqlConnection } from './sql.js';

export async function withSession<T>(driver: typeof pg, connectionString: string, connectMs: number, use: (sql: SqlConnection) => Promise<T>): Promise<T> {
  const client = new driver.Client({ connectionString, connectionTimeoutMillis: connectMs });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('SET statement_timeout = 0');
    return await use({
      query: async (text, params) => ({ rows: (await client.query(text, params)).rows as never[] }),
      exec: async (script) => { await client.query(script); },
    });
  } finally {
    await client.end();
  }
}
