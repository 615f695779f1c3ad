/**
 * The real services of this machine, one private slice per test file: its own Postgres
 * database and its own Redis key prefix, so parallel and repeated runs cannot collide.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { runFolderPrefix, TEST_DATA_ROOT } from '../run-folders.mjs';

/** An administrative connection to the machine's Postgres (trust auth). */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

async function admin<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** A fresh database on the machine's Postgres: empty, or `migrated` (a copy of the migrated template). */
export async function createTestDatabase({ migrated = false }: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `${testDatabasePrefix()}${process.pid}_${randomBytes(4).toString('hex')}`;
  // Loaded when asked for: most users of this file never open a database themselves.
  const template = migrated ? ` TEMPLATE "${await (await import('./migrated-templates.js')).migratedTemplate(POSTGRES_ADMIN_URL)}"` : '';
  await admin(async (client) => {
    await client.query(`CREATE DATABASE "${name}"${template}`);
    // A commit here need not wait for the disk: a test's database is gone with its test, and only
    // a crash of this shared server (never caused by a test: fault tests start their own) could
    // lose the last commits. What every session sees stays the same.
    await client.query(`ALTER DATABASE "${name}" SET synchronous_commit = off`);
  });
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => dropDatabase(url.toString()),
  };
}

/**
 * The names of this run's databases begin with this: the run's own process id (set by
 * test/global-setup.mjs), so that test/global-teardown.mjs can drop what is left of the run,
 * and the next run what a killed run left. Outside jest's run (a script), the process's own.
 */
export const testDatabasePrefix = () => `oauth_test_r${process.env.OAUTH_TEST_RUN ?? process.pid}_`;

/**
 * Drops the database a test created (its name is the path of `databaseUrl`). The drop is started,
 * not waited for: dropping a database waits for a checkpoint of the whole server, and drops that
 * overlap share one. What a worker leaves running when the run ends, the run's teardown drops.
 */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!name.startsWith('oauth_test_')) throw new Error(`refusing to drop ${name}: not a test database`);
  void admin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).catch(() => {
    // Left for the run's teardown (test/global-teardown.mjs), which drops every database of the run.
  });
}

/** Deletes every Redis key under a test's prefix. */
export async function deleteRedisKeys(prefix: string): Promise<void> {
  if (!prefix.startsWith('test:')) throw new Error(`refusing to delete ${prefix}*: not a test prefix`);
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Where tests keep their data folders (test/run-folders.mjs). */
export { TEST_DATA_ROOT };

/**
 * A fresh, empty folder for a DATA_DIR (the caller removes it; what a file leaves, the run's
 * teardown removes: its name begins with the run's, test/run-folders.mjs).
 */
export function tempDataDir(label = 'oauth-test'): string {
  return fs.mkdtempSync(path.join(TEST_DATA_ROOT, `${runFolderPrefix(process.env.OAUTH_TEST_RUN ?? process.pid)}${label}-`));
}

/** A Redis key prefix no other run uses. */
export function testRedisPrefix(): string {
  return `test:${process.pid}:${randomBytes(4).toString('hex')}:`;
}

/** A TCP port free on 127.0.0.1 right now (for a process the test starts itself). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
