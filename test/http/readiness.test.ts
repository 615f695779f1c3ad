/**
 * Readiness (`/healthz/ready`, `/healthz`) is answered before the rate limits, to anyone: it
 * answers from a result at most READY_CACHE_MS old, so however often it is asked each store is
 * pinged about once a second (counted by a private redis-server's own command statistics). A
 * store that fails shows within that second; a stopping instance answers 503 at once.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { READY_CACHE_MS } from '../../src/http/health.js';
import { startRedisServer } from '../helpers/redis-server.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('readiness', () => {
  let server: RedisServer & { port: number };
  let t: TestApp;
  let stats: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    t = await startTestApp({ env: { REDIS_URL: server.url } });
    stats = new Redis(server.url);
  }, 30_000);
  afterAll(async () => {
    stats?.disconnect();
    await t?.close();
    await server?.stop();
  });

  /** PINGs the private Redis has answered so far (INFO commandstats). */
  const pings = async () => Number(/cmdstat_ping:calls=(\d+)/.exec(await stats.info('commandstats'))?.[1] ?? 0);

  test('200 asks in a burst, then one every 50 ms for 2 s: each store pinged about once a second', async () => {
    const before = await pings();
    const burst = await Promise.all(Array.from({ length: 200 }, () => fetch(`${t.baseUrl}/healthz/ready`).then((res) => res.status)));
    expect(new Set(burst)).toEqual(new Set([200]));
    const began = Date.now();
    while (Date.now() - began < 2000) {
      expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (Date.now() - began) / 1000 + 1;
    expect(await pings() - before).toBeLessThanOrEqual(Math.ceil(seconds * 1000 / READY_CACHE_MS) + 1);
  });

  test('a store that stops answering shows within the cache\'s second', async () => {
    expect((await fetch(`${t.baseUrl}/healthz/ready`)).status).toBe(200);
    await server.kill();
    try {
      await new Promise((resolve) => setTimeout(resolve, READY_CACHE_MS + 50));
      const res = await fetch(`${t.baseUrl}/healthz/ready`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'unavailable', failing: ['redis'] });
    } finally {
      await server.restart();
    }
  });

  test('a stopping instance answers 503 at once, whatever was cached', async () => {
    for (let i = 0; i < 50 && (await fetch(`${t.baseUrl}/healthz/ready`)).status !== 200; i += 1) await new Promise((resolve) => setTimeout(resolve, 200));
    t.app.startDraining();
    const res = await fetch(`${t.baseUrl}/healthz/ready`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'stopping' });
  });
});
