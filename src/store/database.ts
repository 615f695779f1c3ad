/**
 * Opens the durable store: PostgreSQL at `databaseUrl`, or embedded PGlite under `dataDir`.
 * Either way the caller gets one Prisma client and one raw connection for migrations.
 *
 * Every PostgreSQL call is bounded (config.ts `Timeouts`): connecting and waiting for a pooled
 * connection (`connectionTimeoutMillis`), each statement (the server's `statement_timeout`,
 * and the client's `query_timeout` a little later for a server that cannot even cancel), and
 * a transaction its client left idle (`idle_in_transaction_session_timeout`). A connection
 * whose query failed is dropped from the pool, not reused.
 *
 * @example const db = await openDatabase({ databaseUrl, dataDir, timeouts }); await db.prisma.user.count();
 */
import type { PoolClient } from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';
import type { Timeouts } from '../config.js';
import { exactReadCache } from './embedded-read-cache.js';
import { within } from './store-failure.js';
import type { HotSql, SqlConnection } from './sql.js';

export interface Database {
  readonly prisma: PrismaClient;
  readonly embedded: boolean;
  /**
   * The driver under Prisma's adapter, for the few hot statements README "Storage" names: the
   * same pool (or PGlite), so the same statement timeout, and the same store guard around it.
   */
  readonly sql: HotSql;
  /** Lends one dedicated connection (session-level advisory locks need one). */
  withConnection<T>(use: (sql: SqlConnection) => Promise<T>): Promise<T>;
  /** One `SELECT 1` (readiness). */
  ping(): Promise<void>;
  /** The connection pool's state (metrics); undefined for the embedded database, which has none. */
  poolState?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export type DatabaseTimeouts = Pick<Timeouts, 'databaseConnectMs' | 'databaseStatementMs' | 'databaseIdleInTransactionMs'>;

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = { databaseConnectMs: 2000, databaseStatementMs: 2000, databaseIdleInTransactionMs: 10_000 };

/** How much later than the server's statement_timeout the client gives up on its own. */
const CLIENT_MARGIN_MS = 500;

export async function openDatabase(options: { databaseUrl: string | undefined; dataDir: string; timeouts?: DatabaseTimeouts }): Promise<Database> {
  const timeouts = options.timeouts ?? DEFAULT_DATABASE_TIMEOUTS;
  return options.databaseUrl ? openPostgres(options.databaseUrl, timeouts) : openEmbedded(options.dataDir);
}

// Each mode loads its own driver only (issue 9 "Memory"): node-postgres and Prisma's pg adapter
// with DATABASE_URL, PGlite and its adapter without.

async function openPostgres(connectionString: string, timeouts: DatabaseTimeouts): Promise<Database> {
  const [{ default: pg }, { PrismaPg }] = await Promise.all([import('pg'), import('@prisma/adapter-pg')]);
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: timeouts.databaseConnectMs,
    statement_timeout: timeouts.databaseStatementMs,
    query_timeout: timeouts.databaseStatementMs + CLIENT_MARGIN_MS,
    idle_in_transaction_session_timeout: timeouts.databaseIdleInTransactionMs,
    keepAlive: true,
  });
  // An idle client that loses its server emits 'error' on the pool; without a listener that
  // kills the process. The next query reports the problem instead.
  pool.on('error', () => {});
  // Every connection, and those lent to requests right now: see close().
  const open = new Set<PoolClient>();
  const lent = new Set<PoolClient>();
  pool.on('connect', (client) => open.add(client));
  pool.on('acquire', (client) => lent.add(client));
  pool.on('release', (_error, client) => lent.delete(client));
  pool.on('remove', (client) => { lent.delete(client); open.delete(client); });
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  // Prepared once per connection: the server plans a hot statement once, not per request.
  const names = new Map<string, string>();
  const sql: HotSql = async (text, params, options) => {
    if (options?.prepare === false) return (await pool.query(text, params)).rows;
    let name = names.get(text);
    if (!name) names.set(text, name = `hot_${names.size}`);
    return (await pool.query({ name, text, values: params })).rows;
  };
  return {
    prisma,
    embedded: false,
    sql,
    // Migrations get a connection of their own, outside the pool and its statement timeout: a
    // migration may rightly take longer than a request's statement, and waits for another
    // instance's advisory lock. Connecting is still bounded.
    async withConnection(use) {
      const client = new pg.Client({ connectionString, connectionTimeoutMillis: timeouts.databaseConnectMs });
      client.on('error', () => {});
      await client.connect();
      try {
        return await use({
          query: async (text, params) => ({ rows: (await client.query(text, params)).rows as never[] }),
          exec: async (script) => { await client.query(script); },
        });
      } finally {
        await client.end();
      }
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    poolState: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      // A request still running at the shutdown deadline (SHUTDOWN_TIMEOUT_MS, src/main.ts) still
      // holds its connection, and pool.end() waits for every connection: it is ended first, its
      // statement failing (a hung one included), so the deadline holds. After a drain that
      // settled, none is lent.
      for (const client of lent) void client.end().catch(() => {});
      const closing = (async () => {
        await prisma.$disconnect();
        await pool.end();
      })();
      // A server that hangs answers no goodbye (nor the rollback Prisma sends an open transaction):
      // closing waits DATABASE_CONNECT_TIMEOUT_MS at most, then drops the sockets (issue 10).
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
