/**
 * store/limiter.ts: counters in Redis or in memory, and refusals held until their window ends
 * (`holdRefusals`, the address budgets): a key refused once is refused again without asking
 * the store, and admitted again once its window is over. A Redis that stops answering is
 * waited on once; meanwhile the insurance limiter counts.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLimiterFactory } from '../../src/store/limiter.js';
import type { LimiterFactory } from '../../src/store/limiter.js';
import { storeGuard } from '../../src/store/store-failure.js';
import { privateRedis } from '../helpers/redis-server.js';
import { deleteRedisKeys, REDIS_URL, testRedisPrefix } from '../helpers/services.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(['redis', 'memory'] as const)('limiters (%s)', (kind) => {
  let redis: Redis | undefined;
  let prefix: string;
  let limiter: LimiterFactory;
  beforeAll(() => {
    prefix = testRedisPrefix();
    redis = kind === 'redis' ? new Redis(REDIS_URL) : undefined;
    limiter = createLimiterFactory(redis && { redis, keyPrefix: prefix, guard: storeGuard('redis') });
  });
  afterAll(async () => {
    await deleteRedisKeys(prefix);
    redis?.disconnect();
  });

  test('a holding limiter answers a refused key itself until the window ends, then counts afresh', async () => {
    const budget = limiter('held', 2, 1, { holdRefusals: true });
    expect((await budget.consume('k')).remaining).toBe(1);
    expect((await budget.consume('k')).remaining).toBe(0);
    expect(budget.refusedHere('k')).toBeUndefined(); // spent, not yet refused
    const refused = await budget.consume('k');
    expect(refused).toMatchObject({ exceeded: true, remaining: 0 });
    expect(refused.resetMs).toBeGreaterThan(0);
    expect(refused.resetMs).toBeLessThanOrEqual(1000);

    const held = budget.refusedHere('k')!;
    expect(held).toMatchObject({ exceeded: true, remaining: 0 });
    expect(held.resetMs).toBeLessThanOrEqual(refused.resetMs);
    if (redis) {
      await redis.del(`${prefix}held:k`); // the store forgets the key: a held refusal does not ask it
      expect((await budget.consume('k')).exceeded).toBe(true);
    }
    await sleep(refused.resetMs + 50);
    expect(budget.refusedHere('k')).toBeUndefined();
    expect(await budget.consume('k')).toMatchObject({ exceeded: false, remaining: 1 });
  });

  test('other keys are not held', async () => {
    const budget = limiter('held-other', 1, 60, { holdRefusals: true });
    await budget.consume('a');
    expect((await budget.consume('a')).exceeded).toBe(true);
    expect(budget.refusedHere('b')).toBeUndefined();
    expect((await budget.consume('b')).exceeded).toBe(false);
  });

  test('delete forgets a held refusal', async () => {
    const budget = limiter('held-deleted', 1, 60, { holdRefusals: true });
    await budget.consume('k');
    await budget.consume('k');
    expect(budget.refusedHere('k')).toBeDefined();
    await budget.delete('k');
    expect(budget.refusedHere('k')).toBeUndefined();
    expect((await budget.consume('k')).exceeded).toBe(false);
  });

  test('without holdRefusals nothing is held: every call asks the store', async () => {
    const budget = limiter('unheld', 1, 60);
    await budget.consume('k');
    expect((await budget.consume('k')).exceeded).toBe(true);
    expect(budget.refusedHere('k')).toBeUndefined();
    await budget.reward('k');
    await budget.reward('k'); // a rewarded budget has room again: holding it would have been wrong
    expect((await budget.consume('k')).exceeded).toBe(false);
  });
});

/**
 * A request never waits on a store longer than its timeout plus a small margin, and
 * "rate limits keep holding while Redis is out". A private redis-server, paused (SIGSTOP), never
 * the shared one.
 */
describe('limiters on a Redis that stops answering', () => {
  /** Each Redis call's bound here (the app's is REDIS_COMMAND_TIMEOUT_MS), short to keep the test quick. */
  const COMMAND_TIMEOUT_MS = 500;
  /** The breaker's pause here (the app's is HUNG_PAUSE_MS): long enough that the calls after the timeout all fall in it on a loaded machine. */
  const PAUSE_MS = 1000;
  const stores = privateRedis(COMMAND_TIMEOUT_MS);

  test('wait one command timeout, then count in memory at once (limits holding) until Redis answers a probe', async () => {
    const limiter = createLimiterFactory({ redis: stores.redis, keyPrefix: 'p:', guard: storeGuard('redis', PAUSE_MS, COMMAND_TIMEOUT_MS) });
    const perAddress = limiter('address', 3, 60);
    const perPair = limiter('pair', 3, 60);
    stores.server.pause();
    let first: { ms: number; remaining: number };
    let rest: number;
    try {
      const started = Date.now();
      first = { remaining: (await perAddress.consume('k')).remaining, ms: Date.now() - started };
      // Every call after the timeout, of this limiter or another on the same Redis: no wait.
      const after = Date.now();
      expect((await perAddress.consume('k')).remaining).toBe(1);
      expect((await perAddress.consume('k')).remaining).toBe(0);
      expect((await perAddress.consume('k')).exceeded).toBe(true);
      expect((await perPair.consume('k')).remaining).toBe(2);
      await perPair.reward('k');
      await perPair.block('k', 60);
      expect((await perPair.consume('k')).exceeded).toBe(true);
      await perPair.delete('k');
      expect((await perPair.consume('k')).exceeded).toBe(false);
      rest = Date.now() - after;
    } finally {
      stores.server.resume();
    }
    expect(first.remaining).toBe(2); // counted in memory
    expect(first.ms).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS - 10);
    expect(first.ms).toBeLessThan(2 * COMMAND_TIMEOUT_MS);
    expect(rest).toBeLessThan(COMMAND_TIMEOUT_MS / 2);

    // Once the pause is over, the next call probes Redis; it answers, and counts are its again.
    await sleep(PAUSE_MS + 50);
    expect((await perAddress.consume('back')).remaining).toBe(2);
    expect(await stores.redis.get('p:address:back')).toBe('1');
  });
});
