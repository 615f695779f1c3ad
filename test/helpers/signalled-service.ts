/**
 * The fixture of the tests that signal the built service (test/shutdown*.test.ts): `node
 * dist/launch.cjs` on its own database and Redis key prefix, with one user (made by the CLI),
 * one registered client, an access token and `codes` fresh authorization codes. Registers its
 * own beforeAll/afterAll; read the fields inside tests.
 *
 * @example const service = signalledService({ username: 'drain', password: '…' }, { SHUTDOWN_DELAY_MS: '600' }, 16);
 */
import { afterAll, beforeAll, expect } from '@jest/globals';
import { obtainCode } from './browser.js';
import type { TestClient } from './browser.js';
import { buildDist } from './build.js';
import { obtainTokens, registerClient } from './fixtures.js';
import { startInstance, stopInstance } from './instance.js';
import type { Instance } from './instance.js';
import { runCli } from './cli.js';
import { createTestDatabase, deleteRedisKeys, REDIS_URL, testRedisPrefix } from './services.js';
import type { TestDatabase } from './services.js';
import type { TestApp } from './test-app.js';

export interface SignalledService {
  database: TestDatabase;
  instance: Instance;
  client: TestClient;
  accessToken: string;
  codes: string[];
}

export function signalledService(user: { username: string; password: string }, env: Record<string, string>, codes: number): SignalledService {
  const service = { codes: [] as string[] } as unknown as SignalledService;
  const prefix = testRedisPrefix();
  beforeAll(async () => {
    await buildDist();
    service.database = await createTestDatabase({ migrated: true });
    const instanceEnv = {
      DATABASE_URL: service.database.url, REDIS_URL, REDIS_KEY_PREFIX: prefix,
      RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000', ...env,
    };
    service.instance = await startInstance(instanceEnv);
    const created = await runCli(['user:create', '--username', user.username, '--password', user.password, '--email', `${user.username}@example.com`, '--full-name', user.username], instanceEnv);
    expect(created.code).toBe(0);
    const t = { baseUrl: service.instance.baseUrl } as TestApp;
    service.client = await registerClient(t);
    service.accessToken = (await obtainTokens(t, service.client, user)).access_token;
    for (let i = 0; i < codes; i += 1) service.codes.push(await obtainCode(service.instance.baseUrl, service.client, user));
  }, 180_000);
  afterAll(async () => {
    if (service.instance) await stopInstance(service.instance);
    await service.database?.drop();
    await deleteRedisKeys(prefix);
  });
  return service;
}
