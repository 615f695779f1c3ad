/**
 * Several instances: two `node dist/launch.cjs` processes on one Postgres and one Redis prefix
 * share the counters, with the default limits: the 61st request across both is limited, and
 * so is the 6th token request.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { buildDist } from '../helpers/build.js';
import { startInstance, stopInstance } from '../helpers/instance.js';
import type { Instance } from '../helpers/instance.js';
import { createTestDatabase, deleteRedisKeys, REDIS_URL, testRedisPrefix } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';

describe('two instances on one Redis', () => {
  let database: TestDatabase;
  const prefix = testRedisPrefix();
  const instances: Instance[] = [];

  beforeAll(async () => {
    await buildDist();
    database = await createTestDatabase({ migrated: true });
    // No rate-limit variables: the defaults (60 and 5).
    const env = { DATABASE_URL: database.url, REDIS_URL, REDIS_KEY_PREFIX: prefix };
    instances.push(await startInstance(env));
    instances.push(await startInstance(env));
  }, 180_000);
  afterAll(async () => {
    await Promise.all(instances.map((instance) => stopInstance(instance)));
    await database?.drop();
    await deleteRedisKeys(prefix);
  });

  test('the 61st request across both is limited', async () => {
    for (let i = 1; i <= 60; i += 1) {
      const res = await fetch(`${instances[i % 2]!.baseUrl}/nothing-here`, { headers: { accept: 'application/json' } });
      expect(res.status).toBe(404);
      expect(res.headers.get('ratelimit-remaining')).toBe(String(60 - i));
    }
    for (const instance of instances) {
      const res = await fetch(`${instance.baseUrl}/nothing-here`, { headers: { accept: 'application/json' } });
      expect(res.status).toBe(429);
      expect(await res.json()).toMatchObject({ error: 'too_many_requests' });
    }
  });

  test('the 6th token request across both is limited', async () => {
    const form = new URLSearchParams({ code: 'x', client_id: 'nobody', client_secret: 'x' }).toString();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      const res = await fetch(`${instances[i % 2]!.baseUrl}/api/token.php`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form,
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });
});
