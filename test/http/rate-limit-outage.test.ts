/**
 * Redis unavailable: never unlimited, never a crash. While Redis is down (or stops answering)
 * each instance counts in its own memory (the insurance limiter) with the same limits; when
 * Redis is back, counting returns to it. The app runs on a private redis-server that the test
 * kills, restarts and pauses.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { startRedisServer } from '../helpers/redis-server.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const LIMIT = 5;

describe('Redis going away and coming back', () => {
  let redis: RedisServer;
  let t: TestApp;
  const logged: unknown[] = [];

  beforeAll(async () => {
    redis = await startRedisServer();
    t = await startTestApp({ env: { REDIS_URL: redis.url, RATE_LIMIT_PER_MINUTE: String(LIMIT), TRUST_PROXY: 'true' }, log: (error) => logged.push(error) });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
  });

  /** A limited request (404: nothing is served there, no store is asked) with a ceiling that proves it does not hang. */
  async function hit(address: string) {
    const res = await fetch(`${t.baseUrl}/nothing-here`, { headers: { 'x-forwarded-for': address, accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return { status: res.status, remaining: res.headers.get('ratelimit-remaining'), retryAfter: res.headers.get('retry-after') };
  }

  async function counter(address: string): Promise<string | null> {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    try {
      return await client.get(`${t.config.redisKeyPrefix}rl:address:${address}`);
    } finally {
      client.disconnect();
    }
  }

  async function until(condition: () => boolean, what: string) {
    for (let waited = 0; !condition(); waited += 50) {
      if (waited > 20_000) throw new Error(`timed out waiting until ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Five served, the sixth refused: the limit holds. */
  async function expectLimited(address: string) {
    for (let i = 1; i <= LIMIT; i += 1) expect(await hit(address)).toEqual({ status: 404, remaining: String(LIMIT - i), retryAfter: null });
    const refused = await hit(address);
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
  }

  test('down: limits still hold (per instance); back: counting returns to Redis', async () => {
    await hit('192.0.2.1');
    expect(await counter('192.0.2.1')).toBe('1');

    await redis.kill();
    await until(() => t.app.redis!.status !== 'ready', 'the app notices Redis is gone');
    await expectLimited('192.0.2.2');
    const health = await fetch(`${t.baseUrl}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: 'unavailable', failing: ['redis'] });

    await redis.restart();
    await until(() => t.app.redis!.status === 'ready', 'the app reconnects');
    await expectLimited('192.0.2.3');
    expect(await counter('192.0.2.3')).toBe(String(LIMIT + 1));
    expect(logged).toEqual([]);
  }, 60_000);

  test('a Redis that stops answering is given up on: requests are answered and still limited', async () => {
    redis.pause();
    try {
      await expectLimited('192.0.2.4');
    } finally {
      redis.resume();
    }
    expect(logged).toEqual([]);
  }, 60_000);
});
