/**
 * Closing the database when its server hangs: a PostgreSQL that
 * stops answering (SIGSTOP of a private cluster) answers no goodbye and no rollback, so close()
 * waits DATABASE_CONNECT_TIMEOUT_MS at most, with idle pooled connections, a connection lent to a
 * transaction and one whose statement hangs, then drops the sockets: the shutdown's deadline holds.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { openDatabase } from '../../src/store/database.js';
import { startPostgresServer } from '../helpers/postgres-server.js';
import type { PostgresServer } from '../helpers/postgres-server.js';

const CONNECT_MS = 800;

describe('database.close() with a hung server', () => {
  let postgres: PostgresServer;
  beforeAll(async () => { postgres = await startPostgresServer(); }, 60_000);
  afterAll(async () => {
    postgres?.resume();
    await postgres?.stop();
  }, 30_000);

  test('returns within DATABASE_CONNECT_TIMEOUT_MS (and a margin), whatever its connections were doing', async () => {
    const db = await openDatabase({
      databaseUrl: postgres.url, dataDir: '',
      timeouts: { databaseConnectMs: CONNECT_MS, databaseStatementMs: 60_000, databaseIdleInTransactionMs: 60_000 },
    });
    // Idle pooled connections, a transaction holding one between statements, and a statement that runs on.
    await Promise.all(Array.from({ length: 3 }, () => db.ping()));
    let inTransaction: (() => void) | undefined;
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => { entered = resolve; });
    const transaction = db.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1`;
      await new Promise<void>((resolve) => { inTransaction = resolve; entered(); });
    }, { timeout: 60_000, maxWait: 20_000 }).catch(() => 'ended');
    const running = db.prisma.$queryRaw`SELECT pg_sleep(30)`.catch(() => 'ended');
    // The transaction holds its connection between statements (waited for, not guessed: on a
    // loaded machine 300 ms were not always enough), and the long statement is under way.
    await Promise.race([inside, transaction]);
    expect(inTransaction).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 300));

    postgres.pause();
    const started = Date.now();
    await db.close();
    const took = Date.now() - started;
    expect(took).toBeLessThan(CONNECT_MS + 1000);
    inTransaction?.();
    postgres.resume();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([Promise.all([transaction, running]), new Promise((resolve) => { timer = setTimeout(() => resolve('still running'), 5000); })]);
    clearTimeout(timer); // or its 5 s keep the worker alive after the suite
    expect(outcome).not.toBe('still running');
  }, 30_000);
});
