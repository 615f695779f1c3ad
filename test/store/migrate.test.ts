/**
 * The migration runner keeps Prisma Migrate's history table exactly as `prisma migrate
 * deploy` would, so the two can take turns on one database.
 *
 * @see https://www.prisma.io/docs/orm/prisma-migrate/understanding-prisma-migrate/migration-histories
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Database } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { StoreKind, TestStore } from '../helpers/databases.js';

/** The migrations on disk, read here independently of the runner under test. */
const MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations/', import.meta.url));
const onDisk = fs.readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => {
    const file = path.join(MIGRATIONS_DIR, entry.name, 'migration.sql');
    return { name: entry.name, checksum: createHash('sha256').update(fs.readFileSync(file)).digest('hex') };
  })
  .sort((a, b) => a.name.localeCompare(b.name));

/** `_prisma_migrations` as Prisma's schema engine creates it on PostgreSQL, in column order. */
const PRISMA_HISTORY_COLUMNS = [
  { column_name: 'id', data_type: 'character varying', character_maximum_length: 36, is_nullable: 'NO', column_default: null },
  { column_name: 'checksum', data_type: 'character varying', character_maximum_length: 64, is_nullable: 'NO', column_default: null },
  { column_name: 'finished_at', data_type: 'timestamp with time zone', character_maximum_length: null, is_nullable: 'YES', column_default: null },
  { column_name: 'migration_name', data_type: 'character varying', character_maximum_length: 255, is_nullable: 'NO', column_default: null },
  { column_name: 'logs', data_type: 'text', character_maximum_length: null, is_nullable: 'YES', column_default: null },
  { column_name: 'rolled_back_at', data_type: 'timestamp with time zone', character_maximum_length: null, is_nullable: 'YES', column_default: null },
  { column_name: 'started_at', data_type: 'timestamp with time zone', character_maximum_length: null, is_nullable: 'NO', column_default: 'now()' },
  { column_name: 'applied_steps_count', data_type: 'integer', character_maximum_length: null, is_nullable: 'NO', column_default: '0' },
];

interface HistoryRow {
  id: string;
  checksum: string;
  finished_at: Date | null;
  migration_name: string;
  logs: string | null;
  rolled_back_at: Date | null;
  started_at: Date;
  applied_steps_count: number;
}

const query = <Row>(db: Database, text: string, params?: unknown[]) =>
  db.withConnection(async (sql) => (await sql.query<Row>(text, params)).rows);

const history = (db: Database) =>
  query<HistoryRow>(db, 'SELECT * FROM "_prisma_migrations" ORDER BY migration_name');

test('there is at least one migration to apply', () => {
  expect(onDisk.length).toBeGreaterThan(0);
});

describe.each<StoreKind>(['postgres', 'embedded'])('migrate() on a fresh database (%s)', (kind) => {
  // One database per store, used in order: fresh → migrated → migrated again → damaged.
  let store: TestStore;
  let firstRun: string[];
  beforeAll(async () => {
    store = await openTestDatabase(kind);
    firstRun = await store.db.withConnection((sql) => migrate(sql));
  });
  afterAll(async () => { await store?.close(); });

  test("creates _prisma_migrations with Prisma's exact columns, types and primary key", async () => {
    const columns = await query(store.db, `
      SELECT column_name, data_type, character_maximum_length, is_nullable, column_default
      FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = '_prisma_migrations'
      ORDER BY ordinal_position`);
    expect(columns).toEqual(PRISMA_HISTORY_COLUMNS);
    const primaryKey = await query(store.db, `
      SELECT k.column_name FROM information_schema.table_constraints c
      JOIN information_schema.key_column_usage k USING (constraint_schema, constraint_name)
      WHERE c.table_schema = 'public' AND c.table_name = '_prisma_migrations' AND c.constraint_type = 'PRIMARY KEY'`);
    expect(primaryKey).toEqual([{ column_name: 'id' }]);
  });

  test('records one finished row per migration directory, with the SHA-256 of migration.sql', async () => {
    expect(firstRun).toEqual(onDisk.map((m) => m.name));
    const rows = await history(store.db);
    expect(rows.map((row) => ({ migration_name: row.migration_name, checksum: row.checksum }))).toEqual(
      onDisk.map((m) => ({ migration_name: m.name, checksum: m.checksum })),
    );
    for (const row of rows) {
      expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.finished_at!.getTime()).toBeGreaterThanOrEqual(row.started_at.getTime());
      expect(row.applied_steps_count).toBe(1);
      expect(row.rolled_back_at).toBeNull();
      expect(row.logs).toBeNull();
    }
  });

  test('applies the migrations themselves (their tables exist)', async () => {
    const tables = await query<{ table_name: string }>(store.db,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name");
    expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['_prisma_migrations', 'users', 'clients', 'oidc_models']));
  });

  test('a second run applies nothing and leaves the history as it was', async () => {
    const before = await history(store.db);
    await expect(store.db.withConnection((sql) => migrate(sql))).resolves.toEqual([]);
    expect(await history(store.db)).toEqual(before);
  });

  test('an unfinished migration (finished_at and rolled_back_at null) makes migrate refuse, naming it', async () => {
    const victim = onDisk[0]!.name;
    await query(store.db, 'UPDATE "_prisma_migrations" SET finished_at = NULL, logs = $2 WHERE migration_name = $1', [victim, 'simulated failure']);
    await expect(store.db.withConnection((sql) => migrate(sql))).rejects.toThrow(victim);
    // Refusing must not have touched the history.
    const rows = await history(store.db);
    expect(rows.filter((row) => row.migration_name === victim)).toEqual([
      expect.objectContaining({ finished_at: null, rolled_back_at: null, logs: 'simulated failure' }),
    ]);
    expect(rows).toHaveLength(onDisk.length);
  });
});

describe('migrate() from several instances at once (postgres)', () => {
  let store: TestStore;
  const instances: Database[] = [];
  beforeAll(async () => {
    store = await openTestDatabase('postgres');
    for (let i = 0; i < 3; i += 1) instances.push(await store.reopen());
  });
  afterAll(async () => {
    for (const db of instances) await db.close();
    await store?.close();
  });

  test('4 concurrent runs on separate connections apply each migration exactly once, without error', async () => {
    const runs = await Promise.all([store.db, ...instances].map((db) => db.withConnection((sql) => migrate(sql))));
    expect(runs.flat().sort()).toEqual(onDisk.map((m) => m.name));
    const rows = await history(store.db);
    expect(rows.map((row) => row.migration_name)).toEqual(onDisk.map((m) => m.name));
    expect(rows.every((row) => row.finished_at !== null && row.applied_steps_count === 1)).toBe(true);
  });
});
