/**
 * What a request costs the stores, counted on the stores' side: PostgreSQL transactions of the
 * bench's own database (`pg_stat_database.xact_commit + xact_rollback`; each statement outside
 * an explicit transaction is one) and Redis commands (`INFO commandstats` of a private
 * redis-server only the service under test talks to). Also what went wrong on the database's
 * side, for a row's notes: its transactions rolled back (a write statement shared by several
 * requests that failed is one, then sent again request by request) and its deadlocks
 * (`pg_stat_database.xact_rollback`, `deadlocks`).
 *
 * PostgreSQL flushes a backend's counters at most once a second, and an idle backend's last
 * ones after 10 s (PGSTAT_IDLE_INTERVAL): read only after `settle()`.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { sleep } from './processes.mjs';

const PG_IDLE_FLUSH_MS = 10_500;

/**
 * Transactions of `database` so far, and of them those rolled back, and its deadlocks, read over an
 * administrative connection to another database: `{ xacts, rollbacks, deadlocks }`.
 */
export async function postgresTransactions(adminUrl, database) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows: [row] } = await client.query('SELECT xact_commit + xact_rollback AS xacts, xact_rollback AS rollbacks, deadlocks FROM pg_stat_database WHERE datname = $1', [database]);
    return { xacts: Number(row?.xacts ?? NaN), rollbacks: Number(row?.rollbacks ?? NaN), deadlocks: Number(row?.deadlocks ?? NaN) };
  } finally {
    await client.end();
  }
}

/** Commands Redis has run so far (every command in `INFO commandstats`, minus the INFO calls of this reader). */
export async function redisCommands(url) {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const info = await redis.info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (match[1] !== 'info' && match[1] !== 'client|setinfo' && match[1] !== 'client') calls += Number(match[2]);
    }
    return calls;
  } finally {
    redis.disconnect();
  }
}

/** Store counters of a target: `{ pg, pgRollbacks, pgDeadlocks, redis }` (NaN where the mode has no such store). */
export function storeCounters({ adminUrl, database, redisUrl }) {
  return {
    async read() {
      const postgres = database ? await postgresTransactions(adminUrl, database) : { xacts: NaN, rollbacks: NaN, deadlocks: NaN };
      return {
        pg: postgres.xacts,
        pgRollbacks: postgres.rollbacks,
        pgDeadlocks: postgres.deadlocks,
        redis: redisUrl ? await redisCommands(redisUrl) : NaN,
      };
    },
    /** Waits until PostgreSQL has flushed what the last requests counted. */
    settle: () => (database ? sleep(PG_IDLE_FLUSH_MS) : Promise.resolve()),
  };
}
