/**
 * Migrated stores to copy from, so that a test's fresh store is migrated without running the
 * migrations again: a PostgreSQL template database (`CREATE DATABASE … TEMPLATE`) and a PGlite
 * data folder, each made by the service's own `migrate()` the first time a test asks, under a
 * lock, and reused while the migrations, the migration runner and PGlite's version are the ones
 * they were made from (their name carries a digest of the three). A test of the migrations
 * themselves starts from an empty store instead (createTestDatabase, openTestDatabase without
 * `migrated`).
 *
 * @example await copyMigratedPglite(dataDir); // then DATA_DIR=dataDir starts on a migrated database
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/store/database.js';
import { MIGRATIONS_DIR, migrate } from '../../src/store/migrate.js';
import { ROOT } from './build.js';
import { withFileLock } from './file-lock.js';
import { TEST_DATA_ROOT } from './services.js';

/** What a migrated store depends on: every migration, the runner, the embedded engine's version. */
function digest(): string {
  const hash = createHash('sha256');
  for (const name of fs.readdirSync(MIGRATIONS_DIR).sort()) {
    const file = path.join(MIGRATIONS_DIR, name, 'migration.sql');
    if (fs.existsSync(file)) hash.update(name).update(fs.readFileSync(file));
  }
  hash.update(fs.readFileSync(path.join(ROOT, 'src/store/migrate.ts')));
  hash.update(fs.readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json')));
  return hash.digest('hex').slice(0, 16);
}
const DIGEST = digest();

/** Prisma Migrate's own advisory lock key plus one: the template is built by one session at a time. */
const TEMPLATE_LOCK = 72707370;
let template: Promise<string> | undefined;

/** The migrated template database on the server of `adminUrl` (made if missing); its name. */
export function migratedTemplate(adminUrl: string): Promise<string> {
  template ??= makeTemplate(adminUrl).catch((error: unknown) => {
    template = undefined;
    throw error;
  });
  return template;
}

async function makeTemplate(adminUrl: string): Promise<string> {
  const name = `oauth_template_${DIGEST}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    if ((await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) return name;
    // Built under another name and renamed once migrated: a run killed half-way leaves no template.
    const building = `${name}_building`;
    await client.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
    await client.query(`CREATE DATABASE "${building}"`);
    const url = new URL(adminUrl);
    url.pathname = `/${building}`;
    const db = await openDatabase({ databaseUrl: url.toString(), dataDir: os.tmpdir() });
    try {
      await db.withConnection((sql) => migrate(sql));
    } finally {
      await db.close();
    }
    await client.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
    return name;
  } finally {
    await client.end(); // ends the session, and its advisory lock with it
  }
}

const PGLITE = path.join(TEST_DATA_ROOT, `oauth-test-pglite-${DIGEST}`);

async function makePglite(): Promise<void> {
  if (fs.existsSync(PGLITE)) return;
  await withFileLock(`${PGLITE}.lock`, async () => {
    if (fs.existsSync(PGLITE)) return;
    // A build this lock's earlier holder did not finish (a killed run).
    for (const name of fs.readdirSync(TEST_DATA_ROOT)) {
      if (name.startsWith(`${path.basename(PGLITE)}.building-`)) fs.rmSync(path.join(TEST_DATA_ROOT, name), { recursive: true, force: true });
    }
    const building = fs.mkdtempSync(`${PGLITE}.building-`);
    try {
      const db = await openDatabase({ databaseUrl: undefined, dataDir: building });
      try {
        await db.withConnection((sql) => migrate(sql));
      } finally {
        await db.close();
      }
      fs.renameSync(path.join(building, 'pglite'), PGLITE);
    } finally {
      fs.rmSync(building, { recursive: true, force: true });
    }
  }, 180_000); // a first PGlite start on a loaded machine
}

/** Puts a migrated PGlite database in `dataDir` (as `dataDir/pglite`, where the service opens it). */
export async function copyMigratedPglite(dataDir: string): Promise<void> {
  await makePglite();
  fs.cpSync(PGLITE, path.join(dataDir, 'pglite'), { recursive: true });
}
