/**
 * The login guard's rules on both stores (Redis under a private prefix, process memory), with
 * small limits so each rule shows in a few attempts (3 free failures, delays of 1 s then 2 s, a
 * ceiling of 6 failures an address). The login page test proves the defaults.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLoginGuard, deviceCookieValue, earliestSeconds, LOGIN_LIMITS, trustedDevice } from '../../src/accounts/login-guard.js';
import type { LoginLimits } from '../../src/accounts/login-guard.js';
import { createLimiterFactory } from '../../src/store/limiter.js';
import { storeGuard } from '../../src/store/store-failure.js';
import { deleteRedisKeys, REDIS_URL, testRedisPrefix } from '../helpers/services.js';

const LIMITS: LoginLimits = { ...LOGIN_LIMITS, freeFailures: 3, firstDelaySeconds: 1, maxDelaySeconds: 2, failuresPerAddressPerDay: 6 };

const redis = new Redis(REDIS_URL, { enableOfflineQueue: false });
const prefix = testRedisPrefix();
beforeAll(async () => { if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve)); });
afterAll(async () => {
  redis.disconnect();
  await deleteRedisKeys(prefix);
});

/** A password check that counts its calls: the guard must not reach it when it refuses. */
function checker(correct: string) {
  const check = async (password: string) => {
    check.calls += 1;
    return password === correct ? { id: 'user-1' } : undefined;
  };
  check.calls = 0;
  return check;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const wrong = async () => undefined;
const right = async () => ({ id: 'x' });

let n = 0;
const fresh = () => { n += 1; return { user: `user${n}`, address: `192.0.2.${n}` }; };

describe('the default policy', () => {
  test('5 free failures, then delays doubling from 1 s to 15 min: 15 attempts in the first 17 minutes, about 110 in a day', () => {
    expect(LOGIN_LIMITS).toMatchObject({ freeFailures: 5, firstDelaySeconds: 1, maxDelaySeconds: 900, windowSeconds: 86_400, failuresPerAddressPerDay: 100 });
    expect([1, 5, 6, 7, 8, 15, 16].map((attempt) => earliestSeconds(attempt))).toEqual([0, 0, 1, 3, 7, 1023, 1923]);
    let perDay = 0;
    while (earliestSeconds(perDay + 1) <= LOGIN_LIMITS.windowSeconds) perDay += 1;
    expect(perDay).toBe(109);
  });

  test('a device cookie names its username: it is trusted for that username only', () => {
    const cookie = deviceCookieValue('Alice');
    expect(trustedDevice(cookie, 'alice')).toEqual(expect.any(String));
    expect(trustedDevice(cookie, 'bob')).toBeUndefined();
    expect(trustedDevice(undefined, 'alice')).toBeUndefined();
    expect(trustedDevice('garbage', 'alice')).toBeUndefined();
    expect(trustedDevice(deviceCookieValue('alice'), 'alice')).not.toBe(trustedDevice(cookie, 'alice'));
  });
});

describe.each(['redis', 'memory'] as const)('login guard (%s)', (store) => {
  let made = 0;
  const guard = () => {
    made += 1;
    return createLoginGuard(createLimiterFactory(store === 'redis' ? { redis, keyPrefix: `${prefix}${store}${made}:`, guard: storeGuard('redis') } : undefined), LIMITS);
  };

  test('the free failures are checked; the next one too early is refused unchecked, and may come once its delay has passed; the delays grow', async () => {
    const g = guard();
    const { user, address } = fresh();
    const check = checker('right');
    for (let i = 1; i < LIMITS.freeFailures; i += 1) expect(await g.attempt({ username: user, address }, () => check('wrong'))).toEqual({ outcome: 'failure' });
    expect(await g.attempt({ username: user, address }, () => check('wrong'))).toEqual({ outcome: 'failure', retryAfter: 1 });
    expect(await g.attempt({ username: user, address }, () => check('right'))).toEqual({ outcome: 'blocked', retryAfter: 1 });
    expect(check.calls).toBe(LIMITS.freeFailures);
    await sleep(1100);
    expect(await g.attempt({ username: user, address }, () => check('wrong'))).toEqual({ outcome: 'failure', retryAfter: 2 });
    expect((await g.attempt({ username: user, address }, () => check('right'))).outcome).toBe('blocked');
    await sleep(2100);
    expect((await g.attempt({ username: user, address }, () => check('right'))).outcome).toBe('success');
    if (store === 'redis') expect(await redis.keys(`${prefix}redis*:login-pair:${address}|*`)).toEqual([]); // forgotten on success
  });

  test('refused attempts are not counted: hammering during a delay does not lengthen it', async () => {
    const g = guard();
    const { user, address } = fresh();
    for (let i = 0; i < LIMITS.freeFailures; i += 1) await g.attempt({ username: user, address }, wrong);
    for (let i = 0; i < 30; i += 1) expect((await g.attempt({ username: user, address }, wrong)).outcome).toBe('blocked');
    await sleep(1100);
    expect((await g.attempt({ username: user, address }, right)).outcome).toBe('success');
  });

  test('the same user from another address is not slowed; nor is another user at the address; usernames are case-insensitive', async () => {
    const g = guard();
    const { user, address } = fresh();
    for (let i = 0; i < LIMITS.freeFailures; i += 1) await g.attempt({ username: user.toUpperCase(), address }, wrong);
    expect((await g.attempt({ username: user, address }, right)).outcome).toBe('blocked');
    expect(await g.attempt({ username: user, address: fresh().address }, right)).toEqual({ outcome: 'success', value: { id: 'x' } });
    expect((await g.attempt({ username: fresh().user, address }, right)).outcome).toBe('success');
  });

  test('a success forgets the pair: its free failures start again', async () => {
    const g = guard();
    const { user, address } = fresh();
    for (let i = 0; i < LIMITS.freeFailures - 1; i += 1) await g.attempt({ username: user, address }, wrong);
    expect((await g.attempt({ username: user, address }, right)).outcome).toBe('success');
    for (let i = 0; i < LIMITS.freeFailures - 1; i += 1) expect(await g.attempt({ username: user, address }, wrong)).toEqual({ outcome: 'failure' });
  });

  test('over its ceiling, an address is refused for usernames that failed there (and unknown ones, after their one check), never for one that has not', async () => {
    const g = guard();
    const { address } = fresh();
    const guessed = Array.from({ length: LIMITS.failuresPerAddressPerDay }, () => fresh().user);
    for (const [i, user] of guessed.entries()) {
      const result = await g.attempt({ username: user, address }, wrong);
      expect(result.outcome).toBe('failure');
      if (i === guessed.length - 1) expect((result as { retryAfter: number }).retryAfter).toBeGreaterThan(LIMITS.addressWindowSeconds - 60);
    }
    const check = checker('right');
    // A username that failed here: refused unchecked, its right password too.
    const blocked = await g.attempt({ username: guessed[0]!, address }, () => check('right'));
    expect(blocked.outcome).toBe('blocked');
    expect((blocked as { retryAfter: number }).retryAfter).toBeLessThanOrEqual(LIMITS.addressWindowSeconds);
    expect(check.calls).toBe(0);
    // A colleague behind the same address who has not failed: checked, and in.
    expect((await g.attempt({ username: fresh().user, address }, () => check('right'))).outcome).toBe('success');
    // A new name (unknown, say): one check, then refused like the others.
    const unknown = fresh().user;
    expect((await g.attempt({ username: unknown, address }, wrong)).outcome).toBe('failure');
    expect((await g.attempt({ username: unknown, address }, right)).outcome).toBe('blocked');
    // Another address is unaffected.
    expect((await g.attempt({ username: guessed[0]!, address: fresh().address }, right)).outcome).toBe('success');
  });

  test('the owner at an attacker\'s address: a trusted device signs in at once, whatever the attacker did to the username and the address', async () => {
    const g = guard();
    const { user: owner, address } = fresh();
    const device = trustedDevice(deviceCookieValue(owner), owner)!;
    for (let i = 0; i < LIMITS.freeFailures + 1; i += 1) await g.attempt({ username: owner, address }, wrong);
    for (let i = 0; i < LIMITS.failuresPerAddressPerDay; i += 1) await g.attempt({ username: fresh().user, address }, wrong);
    expect((await g.attempt({ username: owner, address }, right)).outcome).toBe('blocked'); // a browser the owner never signed in with
    expect((await g.attempt({ username: owner, address, device }, right)).outcome).toBe('success');
    // The device has delays of its own: failures on it slow it, not the pair or the address.
    for (let i = 0; i < LIMITS.freeFailures; i += 1) expect((await g.attempt({ username: owner, address, device }, wrong)).outcome).toBe('failure');
    expect((await g.attempt({ username: owner, address, device }, right)).outcome).toBe('blocked');
  });

  test('parallel guesses cannot overtake the count: only the free ones reach the password check', async () => {
    const g = guard();
    const { user, address } = fresh();
    const check = checker('right');
    const slowWrong = async () => { await sleep(50); return check('wrong'); };
    const results = await Promise.all(Array.from({ length: 12 }, () => g.attempt({ username: user, address }, slowWrong)));
    expect(check.calls).toBe(LIMITS.freeFailures);
    expect(results.filter((r) => r.outcome === 'blocked')).toHaveLength(12 - LIMITS.freeFailures);
  });

  test('a refused pair spends nothing of its address\'s daily budget: others at that address keep theirs', async () => {
    const g = guard();
    const { user, address } = fresh();
    for (let i = 0; i < LIMITS.freeFailures; i += 1) await g.attempt({ username: user, address }, wrong);
    for (let i = 0; i < 20; i += 1) expect((await g.attempt({ username: user, address }, wrong)).outcome).toBe('blocked');
    const others = LIMITS.failuresPerAddressPerDay - LIMITS.freeFailures;
    const names = Array.from({ length: others }, () => fresh().user);
    for (const name of names) expect((await g.attempt({ username: name, address }, wrong)).outcome).toBe('failure');
    expect((await g.attempt({ username: names[0]!, address }, wrong)).outcome).toBe('blocked'); // now over the ceiling
  });
});
