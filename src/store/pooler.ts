/**
 * PostgreSQL through a transaction pooler (PgBouncer `pool_mode = transaction`,
 * docs/production-data-tier.md). Such a pooler lends a server connection for one transaction
 * at a time, so nothing a session carries survives from one transaction to the next, and it
 * refuses the startup parameters that would set the session's bounds. So under the pooler:
 * - the pool sends no startup parameters, and no named prepared statements (database.ts);
 * - the server applies DATABASE_STATEMENT_TIMEOUT_MS and DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS
 *   itself, as the role's settings in the database (one command, {@link boundsCommand}), which
 *   every server connection the pooler opens takes on at login: checked once at start-up, and
 *   start-up refused while they are missing or looser.
 * Without the pooler, the same check catches a pooler that nobody declared.
 *
 * @see https://www.pgbouncer.org/features.html#sql-feature-map-for-pooling-modes
 * @see https://www.postgresql.org/docs/15/sql-alterrole.html
 */
import { ConfigError } from '../config.js';
import type { Timeouts } from '../config.js';
import { errorChain } from './store-failure.js';

type Bounds = Pick<Timeouts, 'databaseStatementMs' | 'databaseIdleInTransactionMs'>;

/** The two bounds: the server's setting, and the variable that configures it. */
const BOUNDS = [
  { setting: 'statement_timeout', variable: 'DATABASE_STATEMENT_TIMEOUT_MS', ms: (b: Bounds) => b.databaseStatementMs },
  { setting: 'idle_in_transaction_session_timeout', variable: 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', ms: (b: Bounds) => b.databaseIdleInTransactionMs },
] as const;

/** What the server applies to this connection (milliseconds; 0 = none), and whose settings they are. */
const READ_BOUNDS = `SELECT current_user AS role, current_database() AS database,
  (SELECT setting::int FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout_ms,
  (SELECT setting::int FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout') AS idle_in_transaction_session_timeout_ms`;

interface BoundsRow {
  role: string;
  database: string;
  statement_timeout_ms: number;
  idle_in_transaction_session_timeout_ms: number;
}

const identifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * The one command that makes the server bound every session of `role` in `database` (run it on
 * DATABASE_DIRECT_URL), and turns its JIT compilation off, as a direct pool's startup parameters do
 * (database.ts SESSION_SETTINGS).
 */
export function boundsCommand(role: string, database: string, bounds: Bounds): string {
  const alter = `ALTER ROLE ${identifier(role)} IN DATABASE ${identifier(database)} SET`;
  return [...BOUNDS.map((bound) => `${alter} ${bound.setting} = '${bound.ms(bounds)}ms';`), `${alter} jit = off;`].join(' ');
}

/**
 * Reads the server's bounds through the pool, once, at start-up. Pooled: a bound the server does
 * not apply (or applies looser than configured) stops start-up with the command that fixes it.
 * Direct: a pool connection refused for its startup parameters, or one that did not get them, is
 * a pooler that DATABASE_POOLER does not declare. A direct database that does not answer is left
 * to the first statement that needs it, as before; a pooler that does not answer stops start-up,
 * as its bounds cannot be checked.
 */
export async function checkServerBounds(query: (text: string) => Promise<BoundsRow[]>, { pooled, timeouts }: { pooled: boolean; timeouts: Bounds }): Promise<void> {
  let row: BoundsRow;
  try {
    [row] = (await query(READ_BOUNDS)) as [BoundsRow];
  } catch (error) {
    if (!pooled && /unsupported startup parameter/.test(String((error as Error).message))) {
      throw new ConfigError('DATABASE_POOLER', `DATABASE_URL refused a startup parameter (${(error as Error).message}) as a transaction pooler such as PgBouncer does: set DATABASE_POOLER=pgbouncer and DATABASE_DIRECT_URL (docs/production-data-tier.md)`);
    }
    if (pooled) throw new Error(`cannot read the server's timeouts through DATABASE_URL (DATABASE_POOLER=pgbouncer): ${(error as Error).message}`, { cause: error });
    return;
  }
  if (!pooled) {
    if (row.statement_timeout_ms !== timeouts.databaseStatementMs) {
      throw new ConfigError('DATABASE_POOLER', `DATABASE_URL did not apply the startup parameter statement_timeout (the server reports ${row.statement_timeout_ms} ms, not ${timeouts.databaseStatementMs}), as a pooler that ignores startup parameters does: set DATABASE_POOLER=pgbouncer and DATABASE_DIRECT_URL (docs/production-data-tier.md)`);
    }
    return;
  }
  for (const bound of BOUNDS) {
    const applied = row[`${bound.setting}_ms`];
    if (applied !== 0 && applied <= bound.ms(timeouts)) continue;
    throw new ConfigError(bound.variable, `through the pooler (DATABASE_POOLER=pgbouncer) the server must apply ${bound.setting} itself, and it is ${applied === 0 ? 'off' : `${applied} ms, looser than ${bound.ms(timeouts)} ms`} for role ${row.role} in database ${row.database}. `
      + `Run once on DATABASE_DIRECT_URL: ${boundsCommand(row.role, row.database, timeouts)} then RECONNECT in PgBouncer's admin console (or restart it) so its server connections take it on (docs/production-data-tier.md)`);
  }
}

/**
 * What readiness says of a failing database behind the pooler: the pooler, and what it or the
 * server answered (no addresses: readiness is public).
 */
export function poolerState(error: unknown): string {
  for (const shape of errorChain(error)) {
    if (shape.code === 'ECONNREFUSED') return 'pgbouncer (DATABASE_URL) refuses connections';
    if (typeof shape.code === 'string' && /^[0-9A-Z]{5}$/.test(shape.code) && typeof shape.message === 'string') return `pgbouncer (DATABASE_URL) answered: ${shape.message}`;
  }
  return `pgbouncer (DATABASE_URL): ${String((error as Error)?.message ?? error).replace(/\S*\d+\.\d+\.\d+\.\d+\S*/g, '…')}`;
}
