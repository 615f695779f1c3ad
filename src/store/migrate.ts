/**
 * Applies prisma/migrations/<timestamp>_<name>/migration.sql and records each in
 * `_prisma_migrations` exactly as `prisma migrate deploy` does (same table, same SHA-256
 * checksum, same advisory lock), so the two can take turns on one database. We cannot run
 * Prisma's own engine here: its CLI downloads a native binary at run time.
 *
 * Safe when several instances start at once: the advisory lock serialises them and each
 * migration runs in its own transaction.
 *
 * @see https://www.prisma.io/docs/orm/prisma-migrate/understanding-prisma-migrate/migration-histories
 */
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SqlConnection } from './sql.js';

/** The key Prisma Migrate passes to pg_advisory_lock. */
const PRISMA_ADVISORY_LOCK = 72707369;

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

const CREATE_HISTORY = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface Migration {
  readonly name: string;
  readonly script: string;
  readonly checksum: string;
}

/** The migrations on disk, oldest first. */
export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs.readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && /^\d{14}_\w+$/.test(entry.name))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const script = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, script, checksum: createHash('sha256').update(script).digest('hex') };
    });
}

interface HistoryRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/** Applies what is missing; returns the names applied by this call. */
export async function migrate(sql: SqlConnection, migrations = readMigrations()): Promise<string[]> {
  await sql.query('SELECT pg_advisory_lock($1)', [PRISMA_ADVISORY_LOCK]);
  try {
    await sql.exec(CREATE_HISTORY);
    const { rows } = await sql.query<HistoryRow>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"',
    );
    const failed = rows.find((row) => row.finished_at === null && row.rolled_back_at === null);
    if (failed) {
      throw new Error(`migration ${failed.migration_name} failed earlier and needs manual resolution (prisma migrate resolve)`);
    }
    const applied = new Set(rows.filter((row) => row.finished_at !== null).map((row) => row.migration_name));
    const done: string[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.name)) continue;
      await sql.exec('BEGIN');
      try {
        await sql.exec(migration.script);
        await sql.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
           VALUES ($1, $2, now(), $3, now(), 1)`,
          [randomUUID(), migration.checksum, migration.name],
        );
        await sql.exec('COMMIT');
      } catch (error) {
        await sql.exec('ROLLBACK');
        throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
      }
      done.push(migration.name);
    }
    return done;
  } finally {
    await sql.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK]);
  }
}
