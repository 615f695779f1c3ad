/**
 * The durable store behind a private PgBouncer in transaction mode, as it ships
 * (docs/production-data-tier.md): no startup parameter it refuses, no named prepared statement,
 * every statement still bounded by the server (the role's settings, checked at start-up), and
 * migrations on DATABASE_DIRECT_URL, where their session-level advisory lock holds.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import pg from 'pg';
import { ConfigError } from '../../src/config.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { openDatabase } from '../../src/store/database.js';
import type { Database } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { asUnavailable } from '../../src/store/store-failure.js';
import { boundRole, startPgbouncer } from '../helpers/pgbouncer.js';
import type { Pgbouncer } from '../helpers/pgbouncer.js';
import { createTestDatabase } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';
import { describeWith, PGBOUNCER } from '../helpers/system-tool.js';

const STATEMENT_MS = 400;
const IDLE_IN_TRANSACTION_MS = 300;
const timeouts = { databaseConnectMs: 2000, databaseStatementMs: STATEMENT_MS, databaseIdleInTransactionMs: IDLE_IN_TRANSACTION_MS };

/** The error `work` rejects with (fails the test if it resolves). */
async function failure(work: Promise<unknown>): Promise<Error & { code?: string; variable?: string }> {
  return work.then(() => { throw new Error('expected a failure'); }, (error: Error) => error);
}

describeWith(PGBOUNCER)('PostgreSQL through PgBouncer (transaction mode)', () => {
  let bouncer: Pgbouncer;
  let bounded: TestDatabase;
  let unbounded: TestDatabase;
  let db: Database;
  const pooled = (database: TestDatabase) => ({
    databaseUrl: bouncer.urlFor(database.url), databaseDirectUrl: database.url, databasePooler: 'pgbouncer' as const, dataDir: '', timeouts,
  });

  beforeAll(async () => {
    [bouncer, bounded, unbounded] = await Promise.all([startPgbouncer(), createTestDatabase(), createTestDatabase()]);
    await boundRole(bounded.url, { statementMs: STATEMENT_MS, idleInTransactionMs: IDLE_IN_TRANSACTION_MS });
    db = await openDatabase(pooled(bounded));
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    await bounded?.drop();
    await unbounded?.drop();
    await bouncer?.stop();
  });

  test('a pool set up for PostgreSQL itself is refused at start-up, naming DATABASE_POOLER (PgBouncer refuses its startup parameters)', async () => {
    const error = await failure(openDatabase({ databaseUrl: bouncer.urlFor(bounded.url), dataDir: '', timeouts }));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variable).toBe('DATABASE_POOLER');
    expect(error.message).toMatch(/unsupported startup parameter: (statement_timeout|idle_in_transaction_session_timeout|options)/);
  });

  test('a pooler that takes the startup parameters but ignores them (ignore_startup_parameters) is detected at start-up too', async () => {
    const lenient = await startPgbouncer({ settings: ['ignore_startup_parameters = statement_timeout,idle_in_transaction_session_timeout,options'] });
    try {
      const error = await failure(openDatabase({ databaseUrl: lenient.urlFor(unbounded.url), dataDir: '', timeouts }));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.variable).toBe('DATABASE_POOLER');
      expect(error.message).toContain(`did not apply the startup parameter statement_timeout (the server reports 0 ms, not ${STATEMENT_MS})`);
    } finally {
      await lenient.stop();
    }
  });

  test('without the role\'s bounds the server would not bound a statement: start-up is refused with the one command that sets them', async () => {
    const error = await failure(openDatabase(pooled(unbounded)));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variable).toBe('DATABASE_STATEMENT_TIMEOUT_MS');
    expect(error.message).toContain(`ALTER ROLE "postgres" IN DATABASE "${unbounded.name}" SET statement_timeout = '${STATEMENT_MS}ms';`);
    expect(error.message).toContain(`SET idle_in_transaction_session_timeout = '${IDLE_IN_TRANSACTION_MS}ms';`);
  });

  test('the role command turns JIT off too: a pooled session never JIT-compiles a statement, as a direct pool\'s do not', async () => {
    expect((await db.sql<{ jit: string }>({ text: "SELECT current_setting('jit') AS jit", values: [] })).rows[0]!.jit).toBe('off');
  });

  test('hot statements are unnamed: the same statement, many at once on shared server connections, never "already exists"', async () => {
    const text = 'SELECT $1::int AS n';
    const rows = await Promise.all(Array.from({ length: 60 }, async (_, n) => (await db.sql<{ n: number }>({ text, values: [n] })).rows));
    expect(rows.map(([row]) => row!.n)).toEqual(Array.from({ length: 60 }, (_, n) => n));
  });

  test('a statement past DATABASE_STATEMENT_TIMEOUT_MS is cancelled by the server through the pooler: a store failure, then the pool serves again', async () => {
    for (const run of [() => db.sql({ text: 'SELECT pg_sleep(5)', values: [] }), () => db.prisma.$queryRawUnsafe('SELECT pg_sleep(5)')]) {
      const started = Date.now();
      const error = await failure(run());
      expect(Date.now() - started).toBeLessThan(STATEMENT_MS + 1500);
      // 57014 query_canceled: the server's statement_timeout fired (the client's own bound, a little later, says "Query read timeout").
      expect(JSON.stringify({ code: error.code, message: error.message })).toMatch(/57014|canceling statement due to statement timeout/);
      expect(asUnavailable('database', error)).toBeInstanceOf(StoreUnavailableError);
      await expect(db.ping()).resolves.toBeUndefined();
    }
  });

  test('a transaction left idle past DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS is ended by the server through the pooler, nothing of it kept', async () => {
    await db.sql({ text: 'CREATE TABLE IF NOT EXISTS idle_probe (n int)', values: [] });
    const error = await failure(db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('INSERT INTO idle_probe VALUES (1)');
      await new Promise((resolve) => setTimeout(resolve, IDLE_IN_TRANSACTION_MS + 700));
      await tx.$executeRawUnsafe('INSERT INTO idle_probe VALUES (2)');
    }, { timeout: 10_000 }));
    expect(asUnavailable('database', error)).toBeInstanceOf(StoreUnavailableError);
    expect((await db.sql({ text: 'SELECT count(*)::int AS n FROM idle_probe', values: [] })).rows).toEqual([{ n: 0 }]);
  });

  test('migrations run on DATABASE_DIRECT_URL: their advisory lock is waited for on a session of PostgreSQL itself', async () => {
    const holder = new pg.Client({ connectionString: bounded.url });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(72707369)'); // another instance migrating
      const direct = new URL(bounded.url);
      direct.searchParams.set('application_name', 'oauth-direct-probe');
      const migrator = await openDatabase({ ...pooled(bounded), databaseDirectUrl: direct.toString() });
      try {
        const migrating = migrator.withConnection((sql) => migrate(sql));
        let waiting: unknown[] = [];
        for (let i = 0; i < 100 && waiting.length === 0; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          ({ rows: waiting } = await holder.query(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = 'oauth-direct-probe' AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'"));
        }
        expect(waiting).toHaveLength(1);
        await holder.query('SELECT pg_advisory_unlock(72707369)');
        expect((await migrating).length).toBeGreaterThan(0);
        // Applied, and seen through the pooler.
        expect((await migrator.sql<{ n: number }>({ text: 'SELECT count(*)::int AS n FROM "_prisma_migrations" WHERE finished_at IS NOT NULL', values: [] })).rows).toEqual([{ n: (await migrating).length }]);
      } finally {
        await migrator.close();
      }
    } finally {
      await holder.end();
    }
  });
});
