/**
 * The durable store opened directly (no app): a fresh database on the machine's Postgres, or
 * embedded PGlite in a temporary DATA_DIR, through src/store/database.ts as the app opens it;
 * empty, or `migrated` (a copy of the migrated template: test/helpers/migrated-templates.ts).
 *
 * @example const store = await openTestDatabase('postgres', { migrated: true }); await store.close();
 */
import fs from 'node:fs';
import { openDatabase } from '../../src/store/database.js';
import type { Database } from '../../src/store/database.js';
import { copyMigratedPglite } from './migrated-templates.js';
import { createTestDatabase, tempDataDir } from './services.js';

export type StoreKind = 'postgres' | 'embedded';

export interface TestStore {
  readonly db: Database;
  /** The Postgres URL (undefined for PGlite). */
  readonly url: string | undefined;
  /** Opens another Database on the same data (Postgres only: PGlite has one owner). */
  reopen(): Promise<Database>;
  /** Closes the store and deletes its data. */
  close(): Promise<void>;
}

export async function openTestDatabase(kind: StoreKind, options: { migrated?: boolean } = {}): Promise<TestStore> {
  const dataDir = tempDataDir();
  const testDb = kind === 'postgres' ? await createTestDatabase({ migrated: options.migrated }) : undefined;
  if (kind === 'embedded' && options.migrated) await copyMigratedPglite(dataDir);
  const open = () => openDatabase({ databaseUrl: testDb?.url, dataDir });
  const db = await open();
  return {
    db,
    url: testDb?.url,
    async reopen() {
      if (!testDb) throw new Error('an embedded database has a single owner: it cannot be reopened while open');
      return open();
    },
    async close() {
      await db.close();
      await testDb?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
