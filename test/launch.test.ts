/**
 * The entry point sizes libuv's thread pool before anything starts it (`src/launch.cts`):
 * one thread per core, 2 to 4, unless the operator set `UV_THREADPOOL_SIZE`. libuv starts every
 * pool thread at once, so the pool's size is the difference in a process's thread count
 * between two instances that differ only in that variable.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { buildDist, ROOT } from './helpers/build.js';
import { startInstance, stopInstance } from './helpers/instance.js';
import type { Instance } from './helpers/instance.js';
import { createTestDatabase } from './helpers/services.js';
import type { TestDatabase } from './helpers/services.js';

const threads = (instance: Instance) => fs.readdirSync(`/proc/${instance.child.pid}/task`).length;

describe('node dist/launch.cjs', () => {
  let database: TestDatabase;
  let threadPoolSize: (cores?: number) => number;
  const instances: Record<string, Instance> = {};

  beforeAll(async () => {
    await buildDist();
    ({ threadPoolSize } = createRequire(import.meta.url)(path.join(ROOT, 'dist', 'launch.cjs')));
    database = await createTestDatabase({ migrated: true });
    for (const size of ['default', '4', '3']) {
      instances[size] = await startInstance(size === 'default' ? { DATABASE_URL: database.url } : { DATABASE_URL: database.url, UV_THREADPOOL_SIZE: size });
    }
  }, 180_000);
  afterAll(async () => {
    await Promise.all(Object.values(instances).map((instance) => stopInstance(instance)));
    await database?.drop();
  });

  test('one pool thread per core, at least 2, at most libuv\'s default 4', () => {
    expect([1, 2, 3, 4, 16].map((cores) => threadPoolSize(cores))).toEqual([2, 2, 3, 4, 4]);
  });

  test('the service runs with that pool', () => {
    expect(threads(instances['4']!) - threads(instances.default!)).toBe(4 - threadPoolSize());
  });

  test('an operator\'s UV_THREADPOOL_SIZE wins', () => {
    expect(threads(instances['4']!) - threads(instances['3']!)).toBe(1);
  });
});
