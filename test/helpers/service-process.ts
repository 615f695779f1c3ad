/**
 * The built service in a process of its own (`node dist/launch.cjs`), on a fresh PostgreSQL
 * database and Redis key prefix, with one user created by the CLI: for what only a real process
 * shows, such as trusting a private CA through NODE_EXTRA_CA_CERTS (read at process start).
 *
 * @example const service = await startServiceProcess({ NODE_EXTRA_CA_CERTS: tls.caFile }); …; await service.close();
 */
import { randomBytes } from 'node:crypto';
import { buildDist } from './build.js';
import { expectSuccess, runCli } from './cli.js';
import { startInstance, stopInstance } from './instance.js';
import type { Instance } from './instance.js';
import { createTestDatabase, deleteRedisKeys, REDIS_URL, testRedisPrefix } from './services.js';
import type { TestDatabase } from './services.js';
import { UNLIMITED } from './test-app.js';
import type { TestUser } from './browser.js';

export interface ServiceProcess {
  readonly instance: Instance;
  readonly baseUrl: string;
  readonly database: TestDatabase;
  readonly user: TestUser;
  close(): Promise<void>;
}

export async function startServiceProcess(env: Record<string, string>): Promise<ServiceProcess> {
  await buildDist();
  const database = await createTestDatabase({ migrated: true });
  const prefix = testRedisPrefix();
  const instance = await startInstance({ DATABASE_URL: database.url, REDIS_URL, REDIS_KEY_PREFIX: prefix, ...UNLIMITED, ...env });
  const user = { username: `user${randomBytes(4).toString('hex')}`, password: 'correct horse battery' };
  expectSuccess(await runCli(['user:create', '--username', user.username, '--email', 'user@example.com', '--full-name', 'Test User', '--password-stdin'], { DATABASE_URL: database.url }, { input: user.password }));
  return {
    instance,
    baseUrl: instance.baseUrl,
    database,
    user,
    async close() {
      await stopInstance(instance);
      await database.drop();
      await deleteRedisKeys(prefix);
    },
  };
}
