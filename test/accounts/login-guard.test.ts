/**
 * The login guard's rules on both stores (Redis under a private prefix, process memory), with
 * small limits so each rule shows in a few attempts. The login page test proves the defaults.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLoginGuard, LOGIN_LIMITS } from '../../src/accounts/login-guard.js';
import type { LoginLimits } from '../../src/accounts/login-guard.js';
import { createLimiterFactory } from '../../src/store/limiter.js';
import { storeGuard } from '../../src/store/store-failure.js';
import { deleteRedisKeys, REDIS_URL, testRedisPrefix } from '../helpers/services.js';

const LIMITS: LoginLimits = { ...LOGIN_LIMITS, failuresPerPair: 3, pairBlockSeconds: 1, failuresPerAddressPerDay: 5 };

const redis = new Redis(REDIS_URL, { enableOfflineQueue: false });
const prefix = testRedisPrefix();
beforeAll(async () => { if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve)); });
afterAll(async () => {
  redis.disconnect();
  await deleteRedisKeys(prefix);
});

/** A password check that counts its calls: the guard must not reach it when blocked. */
function checker(correct: string) {
  const check = async (password: string) => {
    check.calls += 1;
    return password === correct ? { id: 'user-1' } : undefined;
  };
  check.calls = 0;
  return check;
}

let n = 0;
const fresh = () => { n += 1; return { user: `user${n}`, address: `192.0.2.${n}` }; };

describe.each(['redis', 'memory'] as const)('login guard (%s)', (store) => {
  const guard = () => createLoginGuard(createLimiterFactory(store === 'redis' ? { redis, keyPrefix: `${prefix}${store}:`, guard: storeGuard('redis') } : undefined), LIMITS);

  test('consecutive failures of one username from one address block that pair, without checking the password', async () => {
    const g = guard();
    const { user, address } = fresh();
    const check = checker('right');
    expect(await g.attempt(user, address, () => check('wrong'))).toEqual({ outcome: 'failure' });
    expect(await g.attempt(user, address, () => check('wrong'))).toEqual({ outcome: 'failure' });
    expect(await g.attempt(user, address, () => check('wrong'))).toEqual({ outcome: 'failure', retryAfter: 1 });
    const blocked = await g.attempt(user, address, () => check('right'));
    expect(blocked).toEqual({ outcome: 'blocked', retryAfter: 1 });
    expect(check.calls).toBe(3);
    if (store === 'redis') {
      // Counted in Redis (shared by every instance), under the prefix given.
      expect(await redis.get(`${prefix}redis:login-address:${address}`)).toBe('3');
      expect(await redis.keys(`${prefix}redis:login-pair:${address}|*`)).toHaveLength(1);
    }
  });

  test('the same user from another address can still log in; usernames are case-insensitive', async () => {
    const g = guard();
    const { user, address } = fresh();
    for (let i = 0; i < 3; i += 1) await g.attempt(user.toUpperCase(), address, async () => undefined);
    expect((await g.attempt(user, address, async () => ({ id: 'x' }))).outcome).toBe('blocked');
    expect(await g.attempt(user, fresh().address, async () => ({ id: 'x' }))).toEqual({ outcome: 'success', value: { id: 'x' } });
    // Another user from the blocked pair's address is not blocked either.
    expect((await g.attempt(fresh().user, address, async () => ({ id: 'y' }))).outcome).toBe('success');
  });

  test('a success resets the pair', async () => {
    const g = guard();
    const { user, address } = fresh();
    for (let i = 0; i < 2; i += 1) await g.attempt(user, address, async () => undefined);
    expect((await g.attempt(user, address, async () => ({ id: 'x' }))).outcome).toBe('success');
    for (let i = 0; i < 2; i += 1) expect(await g.attempt(user, address, async () => undefined)).toEqual({ outcome: 'failure' });
  });

  test('a blocked pair may try again once the block ends', async () => {
    const g = guard();
    const { user, address } = fresh();
    for (let i = 0; i < 3; i += 1) await g.attempt(user, address, async () => undefined);
    const deadline = Date.now() + 10_000;
    let outcome = 'blocked';
    while (outcome === 'blocked' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      outcome = (await g.attempt(user, address, async () => ({ id: 'x' }))).outcome;
    }
    expect(outcome).toBe('success');
  });

  test('failures from one address across usernames block the address for the day; other addresses are unaffected', async () => {
    const g = guard();
    const { address } = fresh();
    for (let i = 0; i < 4; i += 1) expect(await g.attempt(fresh().user, address, async () => undefined)).toEqual({ outcome: 'failure' });
    const fifth = await g.attempt(fresh().user, address, async () => undefined);
    expect(fifth.outcome).toBe('failure');
    expect((fifth as { retryAfter: number }).retryAfter).toBeGreaterThan(LIMITS.addressWindowSeconds - 60);
    const check = checker('right');
    const blocked = await g.attempt(fresh().user, address, () => check('right'));
    expect(blocked.outcome).toBe('blocked');
    expect((blocked as { retryAfter: number }).retryAfter).toBeLessThanOrEqual(LIMITS.addressWindowSeconds);
    expect(check.calls).toBe(0);
    expect((await g.attempt(fresh().user, fresh().address, () => check('right'))).outcome).toBe('success');
  });

  test('successes do not count against the address', async () => {
    const g = guard();
    const { address } = fresh();
    for (let i = 0; i < 8; i += 1) expect((await g.attempt(fresh().user, address, async () => ({ id: 'x' }))).outcome).toBe('success');
    expect(await g.attempt(fresh().user, address, async () => undefined)).toEqual({ outcome: 'failure' });
  });

  test('parallel guesses cannot overtake the count: at most the limit reach the password check', async () => {
    const g = guard();
    const { user, address } = fresh();
    const check = checker('right');
    const slowWrong = async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return check('wrong'); };
    const results = await Promise.all(Array.from({ length: 12 }, () => g.attempt(user, address, slowWrong)));
    expect(check.calls).toBe(LIMITS.failuresPerPair);
    expect(results.filter((r) => r.outcome === 'blocked')).toHaveLength(12 - LIMITS.failuresPerPair);
    expect(results.every((r) => r.outcome !== 'success')).toBe(true);
  });
});

describe.each(['redis', 'memory'] as const)('login guard: a blocked pair (%s)', (store) => {
  test('costs one count and spends nothing of its address\'s daily budget: others at that address keep their failures', async () => {
    const factory = createLimiterFactory(store === 'redis' ? { redis, keyPrefix: `${prefix}blocked-${store}:`, guard: storeGuard('redis') } : undefined);
    const counted: Record<string, number> = {};
    const g = createLoginGuard((name, ...rest) => {
      const limiter = factory(name, ...rest);
      return { ...limiter, consume: (key) => { counted[name] = (counted[name] ?? 0) + 1; return limiter.consume(key); } };
    }, LIMITS);
    const { user, address } = fresh();
    const wrong = async () => undefined;
    for (let i = 0; i < LIMITS.failuresPerPair; i += 1) expect((await g.attempt(user, address, wrong)).outcome).toBe('failure');
    for (let i = 0; i < 20; i += 1) expect((await g.attempt(user, address, wrong)).outcome).toBe('blocked');
    expect(counted).toEqual({ 'login-pair': LIMITS.failuresPerPair + 20, 'login-address': LIMITS.failuresPerPair });
    // The address has spent failuresPerPair of its failuresPerAddressPerDay: the rest are still there.
    const other = `${user}-other`;
    for (let i = LIMITS.failuresPerPair; i < LIMITS.failuresPerAddressPerDay; i += 1) {
      expect((await g.attempt(other, address, wrong)).outcome).toBe('failure');
    }
    expect((await g.attempt(other, address, wrong)).outcome).toBe('blocked');
  });
});
