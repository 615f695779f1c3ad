/**
 * Start-up waits for a store that is not there yet (STORES_STARTUP_TIMEOUT_MS): a private Redis or
 * PostgreSQL started only after the service began waiting is found, each failed attempt logged; a
 * store still missing at the bound stops start-up with the variable named; a refusal that waiting
 * cannot mend (Redis asking for a password) stops it at once. Real servers, started late.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import { ConfigError } from '../../src/config.js';
import { createLogger } from '../../src/ops/logger.js';
import { startApp } from '../helpers/app-start.js';
import { TEST_KEYS_ENCRYPTION_KEY } from '../helpers/instance.js';
import { startPostgresServer } from '../helpers/postgres-server.js';
import type { PostgresServer } from '../helpers/postgres-server.js';
import { startRedisServer } from '../helpers/redis-server.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, dropDatabase, freePort, tempDataDir, testRedisPrefix } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';

/** The app's log lines, parsed. */
function capturedLogger() {
  const lines: { level: number; msg: string; store?: string }[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line: string) => { lines.push(JSON.parse(line)); } } });
  const retries = (store: string) => lines.filter((line) => line.store === store && /not reachable yet/.test(line.msg));
  return { logger, retries };
}

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('start-up waits for its stores (STORES_STARTUP_TIMEOUT_MS)', () => {
  let database: TestDatabase;
  let dataDir: string;
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  let redis: RedisServer | undefined;
  let postgres: PostgresServer | undefined;
  // One database for the file, so one key that seals its signing keys.
  const base = () => ({ NODE_ENV: 'test', DATA_DIR: dataDir, DATABASE_URL: database.url, KEYS_ENCRYPTION_KEY: TEST_KEYS_ENCRYPTION_KEY, REDIS_KEY_PREFIX: testRedisPrefix() });

  /** What start-up rejected with; a start that succeeded is kept in `app`, closed after the test. */
  const startFailure = (env: Record<string, string>, logger: Parameters<typeof startApp>[1]) => startApp(env, logger)
    .then((started) => { app = started; return undefined; }, (reason: unknown) => reason);

  beforeAll(async () => { database = await createTestDatabase({ migrated: true }); });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await redis?.stop();
    redis = undefined;
    await postgres?.stop();
    postgres = undefined;
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });
  afterAll(async () => { await dropDatabase(database.url); });

  test('a Redis started after the service began waiting is found; each failed attempt is a log line', async () => {
    dataDir = tempDataDir();
    const port = await freePort();
    const { logger, retries } = capturedLogger();
    const starting = startApp({ ...base(), REDIS_URL: `redis://127.0.0.1:${port}`, STORES_STARTUP_TIMEOUT_MS: '30000' }, logger);
    await until(() => retries('redis').length >= 2);
    redis = await startRedisServer({ port });
    app = await starting;
    expect(await app.redis!.ping()).toBe('PONG');
    const lines = retries('redis');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) {
      expect(line.level).toBe(40); // warn
      expect(line.msg).toMatch(new RegExp(`^redis not reachable yet \\(.*ECONNREFUSED 127\\.0\\.0\\.1:${port}\\); retrying in 1 s, for at most \\d+ s more \\(STORES_STARTUP_TIMEOUT_MS\\)$`));
    }
    expect(retries('database')).toEqual([]);
  }, 60_000);

  test('a PostgreSQL started after the service began waiting is found, and migrated', async () => {
    dataDir = tempDataDir();
    postgres = await startPostgresServer();
    await postgres.kill(); // the cluster is made; its server is not running
    const { logger, retries } = capturedLogger();
    const starting = startApp({ NODE_ENV: 'test', DATA_DIR: dataDir, DATABASE_URL: postgres.url, STORES_STARTUP_TIMEOUT_MS: '30000' }, logger);
    await until(() => retries('database').length >= 2);
    await postgres.restart();
    app = await starting;
    expect(await app.db.prisma.user.count()).toBe(0); // the tables exist: migrations ran once it answered
    for (const line of retries('database')) expect(line.msg).toMatch(/^database not reachable yet \(.*ECONNREFUSED.*\); retrying in 1 s, for at most \d+ s more \(STORES_STARTUP_TIMEOUT_MS\)$/);
  }, 60_000);

  test('a store still missing when the wait is over stops start-up, naming STORES_STARTUP_TIMEOUT_MS', async () => {
    dataDir = tempDataDir();
    const port = await freePort();
    const { logger, retries } = capturedLogger();
    const error = await startFailure({ ...base(), REDIS_URL: `redis://127.0.0.1:${port}`, STORES_STARTUP_TIMEOUT_MS: '1500' }, logger);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(new RegExp(`^redis did not answer within STORES_STARTUP_TIMEOUT_MS \\(1500 ms\\): .*ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
    expect(retries('redis').length).toBeGreaterThanOrEqual(1);
  }, 30_000);

  test('STORES_STARTUP_TIMEOUT_MS=0: the first refusal stops start-up, no retry', async () => {
    dataDir = tempDataDir();
    const port = await freePort();
    const { logger, retries } = capturedLogger();
    const error = await startFailure({ ...base(), REDIS_URL: `redis://127.0.0.1:${port}`, STORES_STARTUP_TIMEOUT_MS: '0' }, logger);
    expect((error as Error).message).toMatch(/^redis did not answer within STORES_STARTUP_TIMEOUT_MS \(0 ms\)/);
    expect(retries('redis')).toEqual([]);
  }, 30_000);

  test('a refusal that waiting cannot mend (Redis asks for a password) stops start-up at once, without waiting', async () => {
    dataDir = tempDataDir();
    redis = await startRedisServer({ args: ['--requirepass', 'not-given'] });
    const { logger, retries } = capturedLogger();
    const error = await startFailure({ ...base(), REDIS_URL: redis.url, STORES_STARTUP_TIMEOUT_MS: '30000' }, logger);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('REDIS_URL');
    expect(retries('redis')).toEqual([]);
  }, 30_000);
});
