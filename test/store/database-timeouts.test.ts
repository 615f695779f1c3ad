/**
 * The PostgreSQL bounds (statement timeout, idle-in-transaction timeout), as the
 * server applies them to the pool's connections (`openDatabase`, docs/failure-behaviour.md):
 * a statement running past DATABASE_STATEMENT_TIMEOUT_MS and a transaction left idle past
 * DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS are ended by the server, each a store failure (a 503,
 * never a 500), and the pool serves the next request on a working connection.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { StoreUnavailableError } from '../../src/errors.js';
import { openDatabase } from '../../src/store/database.js';
import type { Database } from '../../src/store/database.js';
import { asUnavailable } from '../../src/store/store-failure.js';
import { createTestDatabase } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';

const STATEMENT_MS = 400;
const IDLE_IN_TRANSACTION_MS = 300;

describe('PostgreSQL session timeouts on the pool', () => {
  let database: TestDatabase;
  let db: Database;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = await openDatabase({
      databaseUrl: database.url, dataDir: '',
      timeouts: { databaseConnectMs: 2000, databaseStatementMs: STATEMENT_MS, databaseIdleInTransactionMs: IDLE_IN_TRANSACTION_MS },
    });
  }, 30_000);
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  test('each connection carries the configured bounds', async () => {
    const [row] = (await db.sql<{ statement: string; idle: string }>({ text: "SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle", values: [] })).rows;
    expect(row).toEqual({ statement: `${STATEMENT_MS}ms`, idle: `${IDLE_IN_TRANSACTION_MS}ms` });
  });

  test('a statement past DATABASE_STATEMENT_TIMEOUT_MS is cancelled by the server: a store failure, then the pool serves again', async () => {
    const started = Date.now();
    const error = await db.sql({ text: 'SELECT pg_sleep(5)', values: [] }).catch((caught: unknown) => caught);
    expect(Date.now() - started).toBeLessThan(STATEMENT_MS + 1500);
    expect((error as { code?: string }).code).toBe('57014'); // query_canceled
    expect(asUnavailable('database', error)).toBeInstanceOf(StoreUnavailableError);
    await expect(db.ping()).resolves.toBeUndefined();
  });

  test('a transaction left idle past DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS is ended by the server: a store failure, nothing of it kept', async () => {
    await db.sql({ text: 'CREATE TABLE IF NOT EXISTS idle_probe (n int)', values: [] });
    const error = await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('INSERT INTO idle_probe VALUES (1)');
      await new Promise((resolve) => setTimeout(resolve, IDLE_IN_TRANSACTION_MS + 700)); // the request's code stalls, holding the transaction
      await tx.$executeRawUnsafe('INSERT INTO idle_probe VALUES (2)');
    }, { timeout: 10_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(asUnavailable('database', error)).toBeInstanceOf(StoreUnavailableError);
    const rows = (await db.sql<{ n: number }>({ text: 'SELECT count(*)::int AS n FROM idle_probe', values: [] })).rows;
    expect(rows).toEqual([{ n: 0 }]);
    // The connection the server closed is not lent again: every connection the pool holds answers.
    await expect(Promise.all(Array.from({ length: 10 }, () => db.ping()))).resolves.toHaveLength(10);
  });
});
