/**
 * Starts the real app on a free port against real stores:
 * - `postgres`: the machine's Postgres (a fresh database) and Redis (a fresh key prefix);
 * - `embedded`: PGlite in a temporary DATA_DIR and in-process session stores.
 *
 * @example const t = await startTestApp(); const res = await fetch(`${t.baseUrl}/healthz`); await t.close();
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app.js';
import type { App, Logger } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Logger as OpsLogger } from '../../src/ops/logger.js';
import type { Config } from '../../src/config.js';
import { copyMigratedPglite } from './migrated-templates.js';
import { createTestDatabase, deleteRedisKeys, dropDatabase, freePort, REDIS_URL, tempDataDir, testRedisPrefix } from './services.js';
import { fixtureJwksFile } from './fixture-keys.js';
import { instanceAnswersAs } from './browser.js';

export type Mode = 'postgres' | 'embedded';

/**
 * Tests send many requests from 127.0.0.1: limits out of reach unless a test sets its own
 * (the rate-limit tests do, through `env`).
 */
export const UNLIMITED = { RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000' } as const;

export interface TestApp {
  readonly app: App;
  readonly config: Config;
  readonly baseUrl: string;
  readonly server: http.Server;
  /** The environment the app was started with (reuse it to restart on the same data). */
  readonly env: Record<string, string>;
  /** Stops the app; `keepData` leaves the database and DATA_DIR for a restart. */
  close(options?: { keepData?: boolean }): Promise<void>;
}

export interface StartOptions {
  mode?: Mode;
  /** Extra or overriding environment variables. */
  env?: Record<string, string>;
  /** Restart on the data of an earlier TestApp (its `env`). */
  reuse?: Record<string, string>;
  /** Receives errors the app logs, with the request's context when one failed (default: fail loudly in the test output). */
  log?: Logger;
  /** A structured logger instead (access and error lines); takes precedence over `log`. */
  logger?: OpsLogger;
  /** Runs on the environment (and the database it names) before the app starts: to put a pooler in front, say. */
  beforeStart?: (env: Record<string, string>) => Promise<void> | void;
}

async function listen(server: http.Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export async function startTestApp(options: StartOptions = {}): Promise<TestApp> {
  const mode = options.mode ?? 'postgres';
  const server = http.createServer();
  const port = await listen(server, options.reuse ? Number(options.reuse.PORT) : 0);

  let env: Record<string, string>;
  if (options.reuse) {
    env = { ...options.reuse, ...options.env };
  } else {
    const dataDir = tempDataDir();
    env = { NODE_ENV: 'test', PORT: String(port), BASE_URL: `http://localhost:${port}`, DATA_DIR: dataDir, JWKS_FILE: fixtureJwksFile(), ...UNLIMITED };
    if (mode === 'postgres') {
      const database = await createTestDatabase({ migrated: true });
      Object.assign(env, { DATABASE_URL: database.url, REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix() });
    } else if (options.env?.DATA_DIR === undefined) {
      await copyMigratedPglite(dataDir);
    }
    Object.assign(env, options.env);
  }
  await options.beforeStart?.(env);
  const config = loadConfig(env);
  const app = await createApp(config, options.logger ?? options.log ?? ((error) => console.error('app error:', error)));
  server.on('request', app.callback());

  return {
    app,
    config,
    env,
    server,
    baseUrl: config.baseUrl,
    async close({ keepData = false } = {}) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
      if (keepData) return;
      if (env.DATABASE_URL) await dropDatabase(env.DATABASE_URL);
      if (env.REDIS_KEY_PREFIX) await deleteRedisKeys(env.REDIS_KEY_PREFIX);
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A second instance on `a`'s data (its PostgreSQL and Redis): same BASE_URL, as behind one load
 * balancer, its own port. Closing it leaves the data to `a`.
 */
export async function secondInstance(a: TestApp, env: Record<string, string> = {}): Promise<TestApp> {
  const port = await freePort();
  const b = await startTestApp({ reuse: { ...a.env, PORT: String(port), ...env } });
  instanceAnswersAs(`http://localhost:${port}`, b.env.BASE_URL!);
  return { ...b, baseUrl: `http://localhost:${port}`, close: () => b.close({ keepData: true }) };
}
