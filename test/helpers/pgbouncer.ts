/**
 * A private PgBouncer in transaction mode, otherwise as it ships (no `ignore_startup_parameters`,
 * default pool sizes), in front of the machine's PostgreSQL: bench/lib/pgbouncer.mjs, which the
 * bench's `pgbouncer` mode starts too. And the one-time command the docs give for the role.
 *
 * @example const bouncer = await startPgbouncer(); await boundRole(database.url); const url = bouncer.urlFor(database.url); await bouncer.stop();
 */
import pg from 'pg';
import { startPgbouncer as start } from '../../bench/lib/pgbouncer.mjs';
import type { Pgbouncer } from '../../bench/lib/pgbouncer.mjs';
import { boundsCommand } from '../../src/store/pooler.js';
import { POSTGRES_ADMIN_URL } from './services.js';
import { PGBOUNCER, program } from './system-tool.js';

export type { Pgbouncer };

/** `settings`: more `[pgbouncer]` lines, for a test of a pooler set up otherwise. Inside `describeWith(PGBOUNCER)`. */
export function startPgbouncer({ settings = [] }: { settings?: string[] } = {}): Promise<Pgbouncer> {
  return start({ upstream: POSTGRES_ADMIN_URL, settings, program: program(PGBOUNCER) });
}

/**
 * The documented one-time command (docs/production-data-tier.md): the server bounds every
 * session of the role in `databaseUrl`'s database, as a pooled service needs. Run on the server
 * itself before the pooler opens its first connection to that database.
 */
export async function boundRole(databaseUrl: string, { statementMs = 2000, idleInTransactionMs = 10_000 } = {}): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: [who] } = await client.query<{ role: string; database: string }>('SELECT current_user AS role, current_database() AS database');
    await client.query(boundsCommand(who!.role, who!.database, { databaseStatementMs: statementMs, databaseIdleInTransactionMs: idleInTransactionMs }));
  } finally {
    await client.end();
  }
}
