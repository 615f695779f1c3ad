/**
 * Opens the durable store: PostgreSQL at `databaseUrl`, or embedded PGlite under `dataDir`.
 * Either way the caller gets one Prisma client and one raw connection for migrations.
 *
 * @example const db = await openDatabase({ databaseUrl, dataDir }); await db.prisma.user.count();
 */
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaClient } from '../generated/prisma/client.js';
import { openEmbeddedPostgres } from './embedded-postgres.js';
import type { SqlConnection } from './sql.js';

export interface Database {
  readonly prisma: PrismaClient;
  readonly embedded: boolean;
  /** Lends one dedicated connection (session-level advisory locks need one). */
  withConnection<T>(use: (sql: SqlConnection) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openDatabase(options: { databaseUrl: string | undefined; dataDir: string }): Promise<Database> {
  return options.databaseUrl ? openPostgres(options.databaseUrl) : openEmbedded(options.dataDir);
}

function openPostgres(connectionString: string): Database {
  const pool = new pg.Pool({ connectionString, max: 10 });
  // An idle client that loses its server emits 'error' on the pool; without a listener that
  // kills the process. The next query reports the problem instead.
  pool.on('error', () => {});
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    prisma,
    embedded: false,
    async withConnection(use) {
      const client = await pool.connect();
      try {
        return await use({
          query: async (text, params) => ({ rows: (await client.query(text, params)).rows as never[] }),
          exec: async (script) => { await client.query(script); },
        });
      } finally {
        client.release();
      }
    },
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

async function openEmbedded(dataDir: string): Promise<Database> {
  const embedded = await openEmbeddedPostgres(dataDir);
  const { pglite } = embedded;
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  return {
    prisma,
    embedded: true,
    withConnection: (use) => use({
      query: async (text, params) => ({ rows: (await pglite.query(text, params)).rows as never[] }),
      exec: async (script) => { await pglite.exec(script); },
    }),
    async close() {
      await prisma.$disconnect();
      await embedded.close();
    },
  };
}
