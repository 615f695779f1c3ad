/**
 * store/limiter.ts: counters in Redis or in memory, and refusals held until their window ends
 * (`holdRefusals`, the address budgets): a key refused once is refused again without asking
 * the store, and admitted again once its window is over.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLimiterFactory } from '../../src/store/limiter.js';
import type { LimiterFactory } from '../../src/store/limiter.js';
import { deleteRedisKeys, REDIS_URL, testRedisPrefix } from '../helpers/services.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(['redis', 'memory'] as const)('limiters (%s)', (kind) => {
  let redis: Redis | undefined;
  let prefix: string;
  let limiter: LimiterFactory;
  beforeAll(() => {
    prefix = testRedisPrefix();
    redis = kind === 'redis' ? new Redis(REDIS_URL) : undefined;
    limiter = createLimiterFactory(redis && { redis, keyPrefix: prefix });
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
