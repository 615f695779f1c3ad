/**
 * Brute-force protection for any username + password form (RFC 6749 §10.10, OWASP
 * Authentication Cheat Sheet and "Slow Down Online Guessing Attacks with Device Cookies"). It
 * slows guessing without letting anyone lock an owner out:
 *
 * | rule | with the defaults ({@link LOGIN_LIMITS}) |
 * |------|------------------------------------------|
 * | **Growing delays per username and address.** A pair's attempts are counted in a window that starts at its first failure; the n-th must come at least `delay(freeFailures+1) + … + delay(n)` after that start, `delay` doubling from 1 s to a ceiling. Earlier is refused unchecked (429 with `Retry-After`), and not counted. A success forgets the pair. | 5 free, then 1 s, 2 s, 4 s … 15 min between attempts: 15 attempts in the first 17 minutes, then 4 an hour; about 110 a day |
 * | **A ceiling per address**, on failures of any username: once over it, a username that has failed from that address today is refused unchecked; one that has not is checked, so a colleague behind the same NAT still signs in. | 100 failures a day |
 * | **Trusted browsers.** A browser where a user signed in holds a signed device cookie naming that user (ui/sign-in.ts); its attempts for that user are counted on the device, not on the pair or the address, so another's failures at the same address never slow the owner. | a device gets the same delays on its own |
 *
 * Nothing is keyed by username alone. Each attempt is counted before the password is checked
 * and given back when refused or forgotten on success, so parallel guesses cannot overtake the
 * count; a refused attempt never reaches the password check (no argon2 work).
 *
 * @example const result = await guard.attempt({ username, address: clientKey(ctx), device }, () => users.authenticate(username, password));
 */
import { createHash, randomBytes } from 'node:crypto';
import { retryAfterSeconds } from '../store/limiter.js';
import type { LimiterFactory } from '../store/limiter.js';
import { normalizeUsername } from './user-store.js';

export const LOGIN_LIMITS = {
  /** Failures of a pair (or a device) before any delay: typing mistakes. */
  freeFailures: 5,
  /** The first delay, doubled for each failure after it… */
  firstDelaySeconds: 1,
  /** …up to this one. */
  maxDelaySeconds: 15 * 60,
  /** A pair's (or device's) window: its count starts again this long after its first failure. */
  windowSeconds: 24 * 60 * 60,
  /** Failures from one address (any usernames) in its window before the ceiling applies. */
  failuresPerAddressPerDay: 100,
  addressWindowSeconds: 24 * 60 * 60,
} as const;

export type LoginLimits = { readonly [K in keyof typeof LOGIN_LIMITS]: number };

export type LoginAttempt<T> =
  | { readonly outcome: 'success'; readonly value: T }
  /** `retryAfter` (seconds) when the next attempt of this pair (or device) must wait. */
  | { readonly outcome: 'failure'; readonly retryAfter?: number }
  /** Not checked at all: too early for the pair (or device), or the address is over its ceiling. */
  | { readonly outcome: 'blocked'; readonly retryAfter: number };

/** Who is signing in: the username typed, the client's address, and the browser's device cookie if it names this username. */
export interface LoginAttempter {
  readonly username: string;
  readonly address: string;
  /** From {@link trustedDevice}: the browser signed in as this username before. */
  readonly device?: string | undefined;
}

export interface LoginGuard {
  /** Runs `verify` (the password check) unless refused; `verify` resolves the user or undefined. */
  attempt<T>(who: LoginAttempter, verify: () => Promise<T | null | undefined>): Promise<LoginAttempt<T>>;
}

/** `guard`, each attempt's outcome (success, failure, blocked) told to `counted`: the metrics count them. */
export function countingOutcomes(guard: LoginGuard, counted: (outcome: LoginAttempt<unknown>['outcome']) => void): LoginGuard {
  return {
    async attempt(who, verify) {
      const result = await guard.attempt(who, verify);
      counted(result.outcome);
      return result;
    },
  };
}

/** A username as the guard keys it: bounded and opaque whatever it holds. */
const usernameTag = (username: string) => createHash('sha256').update(normalizeUsername(username)).digest('base64url').slice(0, 22);

/** The device cookie's value for a browser that just signed in as `username` (a fresh random id and the username's tag). */
export const deviceCookieValue = (username: string) => `${randomBytes(16).toString('base64url')}~${usernameTag(username)}`;

/** The device id of a (signed, so ours) device cookie, if it was issued for `username`. */
export function trustedDevice(cookie: string | undefined, username: string): string | undefined {
  const [device, tag] = (cookie ?? '').split('~');
  return device && tag === usernameTag(username) ? device : undefined;
}

/** Seconds from a window's start before its n-th attempt is let through. */
export function earliestSeconds(n: number, limits: LoginLimits = LOGIN_LIMITS): number {
  let total = 0;
  for (let k = 1; k <= n - limits.freeFailures; k += 1) total += Math.min(limits.firstDelaySeconds * 2 ** (k - 1), limits.maxDelaySeconds);
  return total;
}

export function createLoginGuard(limiter: LimiterFactory, limits: LoginLimits = LOGIN_LIMITS): LoginGuard {
  // Points out of reach: these only count (a window's start and its attempts); the delays decide.
  const pairs = limiter('login-pair', Number.MAX_SAFE_INTEGER, limits.windowSeconds);
  const devices = limiter('login-device', Number.MAX_SAFE_INTEGER, limits.windowSeconds);
  const addresses = limiter('login-address', limits.failuresPerAddressPerDay, limits.addressWindowSeconds);

  return {
    async attempt({ username, address, device }, verify) {
      const [counter, key] = device ? [devices, device] : [pairs, `${address}|${usernameTag(username)}`];
      // The pair (or device) first: a refused attempt costs one count, given back, and spends
      // nothing of its address's daily budget, which a real user there shares. A Redis that hangs
      // is waited on once: after one timeout the limiters count in memory (store/limiter.ts).
      const count = await counter.consume(key);
      const elapsed = limits.windowSeconds - count.resetMs / 1000;
      const early = earliestSeconds(count.consumed, limits) - elapsed;
      if (early > 0) {
        await counter.reward(key);
        return { outcome: 'blocked', retryAfter: Math.max(Math.ceil(early), 1) };
      }
      // A trusted device is the owner's: no address ceiling (others' failures there are not theirs).
      const perAddress = device ? undefined : await addresses.consume(address);
      if (perAddress?.exceeded && count.consumed > 1) {
        await Promise.all([counter.reward(key), addresses.reward(address)]);
        return { outcome: 'blocked', retryAfter: retryAfterSeconds(perAddress.resetMs) };
      }

      const value = await verify();
      if (value !== undefined && value !== null) {
        await Promise.all([counter.delete(key), perAddress ? addresses.reward(address) : undefined]);
        return { outcome: 'success', value };
      }
      const next = Math.ceil(earliestSeconds(count.consumed + 1, limits) - elapsed);
      const ceiling = perAddress && perAddress.consumed >= limits.failuresPerAddressPerDay ? retryAfterSeconds(perAddress.resetMs) : 0;
      const retryAfter = Math.max(next, ceiling);
      return retryAfter > 0 ? { outcome: 'failure', retryAfter } : { outcome: 'failure' };
    },
  };
}
