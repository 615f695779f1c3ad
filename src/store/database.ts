/**
 * Opens the durable store: PostgreSQL at `databaseUrl`, or embedded PGlite under `dataDir`.
 * Either way the caller gets one Prisma client and one raw connection for migrations.
 *
 * Every PostgreSQL call is bounded (config.ts `Timeouts`): connecting and waiting for a pooled
 * connection (`connectionTimeoutMillis`), each statement (the server's `statement_timeout`,
 * and the client's `query_timeout` a little later for a server that cannot even cancel), and
 * a transaction its client left idle (`idle_in_transaction_session_timeout`). A connection
 * whose query failed is dropped from the pool, not reused. Behind a transaction pooler
 * (DATABASE_POOLER=pgbouncer) the server applies the bounds itself and statements are unnamed
 * (pooler.ts); what needs a session uses DATABASE_DIRECT_URL.
 *
 * @example const db = await openDatabase({ databaseUrl, dataDir, timeouts }); await db.prisma.user.count();
 */
import type { PoolClient } from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';
import type { Config, Timeouts } from '../config.js';
import { exactReadCache } from './embedded-read-cache.js';
import { checkServerBounds, poolerState } from './pooler.js';
import { withSession } from './session-connection.js';
import { isStoreFailure, within } from './store-failure.js';
import type { HotSql, SqlConnection } from './sql.js';

export interface Database {
  readonly prisma: PrismaClient;
  readonly embedded: boolean;
  /**
   * The driver under Prisma's adapter, for the few hot statements docs/storage.md names: the
   * same pool (or PGlite), so the same statement timeout, and the same store guard around it.
   */
  readonly sql: HotSql;
  /**
   * Lends one dedicated connection, on DATABASE_DIRECT_URL when set (session-level advisory
   * locks need a session of their own, which a transaction pooler cannot give).
   */
  withConnection<T>(use: (sql: SqlConnection) => Promise<T>): Promise<T>;
  /** One `SELECT 1` (readiness). */
  ping(): Promise<void>;
  /** Behind a pooler: what readiness says of a failing database beside its name (the pooler, and its last answer). */
  poolerState?(): string | undefined;
  /** The connection pool's state (metrics); undefined for the embedded database, which has none. */
  poolState?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export type DatabaseTimeouts = Pick<Timeouts, 'databaseConnectMs' | 'databaseStatementMs' | 'databaseIdleInTransactionMs'>;

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = { databaseConnectMs: 2000, databaseStatementMs: 2000, databaseIdleInTransactionMs: 10_000 };

/**
 * The session settings of a direct pool's connections (startup parameters):
 * - a named statement is planned at each execution, with its values. After five executions
 *   PostgreSQL may keep one plan for any values; one made while oidc_models was nearly empty reads
 *   the whole table, and stays until the table is next analyzed, however much it has grown;
 * - no JIT compilation. The planner's cost of a lookup grows with the tables it joins (a key set
 *   is estimated at 100 rows) until it passes `jit_above_cost`, and compiling a statement then
 *   takes a hundred times longer than running it: every request waits for it.
 * Behind a pooler the role's settings turn JIT off (pooler.ts boundsCommand), and statements are
 * unnamed, so always planned with their values.
 */
const SESSION_SETTINGS = '-c plan_cache_mode=force_custom_plan -c jit=off';

/** How much later than the server's statement_timeout the client gives up on its own. */
const CLIENT_MARGIN_MS = 500;

export type DatabaseOptions = Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'databaseDirectUrl' | 'databasePooler'>> & { timeouts?: DatabaseTimeouts };

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const timeouts = options.timeouts ?? DEFAULT_DATABASE_TIMEOUTS;
  if (!options.databaseUrl) return openEmbedded(options.dataDir);
  return openPostgres(options.databaseUrl, { direct: options.databaseDirectUrl ?? options.databaseUrl, pooled: options.databasePooler === 'pgbouncer', timeouts });
}

/**
 * {@link openDatabase}, once the database answered a `SELECT 1`: one that does not answer is closed
 * again and its failure thrown, so start-up can wait for it (startup-wait.ts). Opening alone does
 * not find out: a direct database that does not answer is left to its first statement.
 */
export async function openAnsweringDatabase(options: DatabaseOptions): Promise<Database> {
  const db = await openDatabase(options);
  try {
    await db.ping();
    return db;
  } catch (error) {
    await db.close();
    throw error;
  }
}

// Each mode loads its own driver only (less memory): node-postgres and Prisma's pg adapter
// with DATABASE_URL, PGlite and its adapter without.

async function openPostgres(connectionString: string, { direct, pooled, timeouts }: { direct: string; pooled: boolean; timeouts: DatabaseTimeouts }): Promise<Database> {
  const [{ default: pg }, { PrismaPg }] = await Promise.all([import('pg'), import('@prisma/adapter-pg')]);
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: timeouts.databaseConnectMs,
    query_timeout: timeouts.databaseStatementMs + CLIENT_MARGIN_MS,
    // Startup parameters a transaction pooler refuses: behind one, the server's role settings bound
    // the session (pooler.ts), and every statement is unnamed, so planned with its values anyway.
    ...(pooled ? {} : {
      statement_timeout: timeouts.databaseStatementMs,
      idle_in_transaction_session_timeout: timeouts.databaseIdleInTransactionMs,
      options: SESSION_SETTINGS,
    }),
    keepAlive: true,
  });
  // An idle client that loses its server emits 'error' on the pool; without a listener that
  // kills the process. The next query reports the problem instead.
  pool.on('error', () => {});
  // Every connection the pool holds (lent or idle): see close(). Followed per connection, not per query.
  const open = new Set<PoolClient>();
  pool.on('connect', (client) => open.add(client));
  pool.on('remove', (client) => open.delete(client));
  try {
    await checkServerBounds(async (text) => (await pool.query(text)).rows, { pooled, timeouts });
  } catch (error) {
    await pool.end();
    throw error;
  }
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  // A named statement is prepared once per connection: the server parses it once, not per request.
  // A transaction pooler hands the next transaction another server connection, where the name
  // is unknown (or taken): there every statement is unnamed, parsed with its execution.
  const named = pool.query.bind(pool) as unknown as HotSql;
  // Behind the pooler, the last failure is kept for readiness (poolerState).
  let lastFailure: unknown;
  const unnamed: HotSql = async ({ text, values }) => {
    try {
      const result = await pool.query(text, values);
      lastFailure = undefined;
      return result as never;
    } catch (error) {
      if (isStoreFailure(error)) lastFailure = error;
      throw error;
    }
  };
  const sql = pooled ? unnamed : named;
  return {
    prisma,
    embedded: false,
    sql,
    withConnection: (use) => withSession(pg, direct, timeouts.databaseConnectMs, use),
    async ping() {
      try {
        await pool.query('SELECT 1');
        lastFailure = undefined;
      } catch (error) {
        lastFailure = error;
        throw error;
      }
    },
    ...(pooled ? { poolerState: () => (lastFailure === undefined ? undefined : poolerState(lastFailure)) } : {}),
    poolState: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      // A request still running at the shutdown deadline (SHUTDOWN_TIMEOUT_MS, src/main.ts) still
      // holds its connection, and pool.end() waits for every connection: every connection is
      // ended here, its statement failing (a hung one included), so the deadline holds. After a
      // drain that settled, none is lent, and this is what pool.end() does.
      for (const client of open) void client.end().catch(() => {});
      const closing = (async () => {
        await prisma.$disconnect();
        await pool.end();
      })();
      // A server that hangs answers no goodbye (nor the rollback Prisma sends an open transaction):
      // closing waits DATABASE_CONNECT_TIMEOUT_MS at most, then drops the sockets.
      const closed = await within(timeouts.databaseConnectMs, closing.then(() => true, () => true)).catch(() => false);
      if (!closed) for (const client of open) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    },
  };
}

async function openEmbedded(dataDir: string): Promise<Database> {
  const [{ openEmbeddedPostgres }, { PrismaPGlite }] = await Promise.all([import('./embedded-postgres.js'), import('pglite-prisma-adapter')]);
  const embedded = await openEmbeddedPostgres(dataDir);
  // This process owns the database, so it sees every write: the hot reads may be cached exactly
  // (embedded-read-cache.ts) as long as every statement goes through `watched`.
  const { watched: pglite, sql } = exactReadCache(embedded.pglite);
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  return {
    prisma,
    embedded: true,
    sql,
    withConnection: (use) => use({
      query: async (text, params) => ({ rows: (await pglite.query(text, params)).rows as never[] }),
      exec: async (script) => { await pglite.exec(script); },
    }),
    async ping() {
      await pglite.query('SELECT 1');
    },
    async close() {
      await prisma.$disconnect();
      await embedded.close();
    },
  };
}
