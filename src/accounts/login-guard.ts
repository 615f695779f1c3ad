/**
 * Brute-force protection for any username + password form (RFC 6749 §10.10, OWASP
 * Authentication Cheat Sheet "Account lockout"):
 *
 * - {@link LOGIN_LIMITS.failuresPerPair} consecutive failures of one username from one address
 *   block that pair for {@link LOGIN_LIMITS.pairBlockSeconds}; a success resets the pair.
 * - {@link LOGIN_LIMITS.failuresPerAddressPerDay} failures from one address (any usernames)
 *   block the address until its day-long window ends.
 * - Nothing is keyed by username alone: the same user from another address can still log in,
 *   so an attacker cannot lock a victim out.
 *
 * Each attempt is counted as a failure before the password is checked and given back on
 * success, so parallel guesses cannot overtake the count; a blocked attempt never reaches the
 * password check (no argon2 work).
 *
 * @example const result = await guard.attempt(username, clientAddress(ctx), () => users.authenticate(username, password));
 */
import { createHash } from 'node:crypto';
import { retryAfterSeconds } from '../store/limiter.js';
import type { LimiterFactory, Usage } from '../store/limiter.js';
import { normalizeUsername } from './user-store.js';

export const LOGIN_LIMITS = {
  failuresPerPair: 10,
  /** Window of the consecutive-failure count of a pair (reset earlier by a success). */
  pairWindowSeconds: 24 * 60 * 60,
  pairBlockSeconds: 15 * 60,
  failuresPerAddressPerDay: 100,
  addressWindowSeconds: 24 * 60 * 60,
} as const;

export type LoginLimits = { readonly [K in keyof typeof LOGIN_LIMITS]: number };

export type LoginAttempt<T> =
  | { readonly outcome: 'success'; readonly value: T }
  /** `retryAfter` (seconds) when this failure blocked the pair or the address. */
  | { readonly outcome: 'failure'; readonly retryAfter?: number }
  /** Not checked at all: the pair or the address is blocked for `retryAfter` more seconds. */
  | { readonly outcome: 'blocked'; readonly retryAfter: number };

export interface LoginGuard {
  /** Runs `verify` (the password check) unless blocked; `verify` resolves the user or undefined. */
  attempt<T>(username: string, address: string, verify: () => Promise<T | null | undefined>): Promise<LoginAttempt<T>>;
}

/** Bounded, opaque keys whatever the username holds. */
const pairKey = (username: string, address: string) =>
  `${address}|${createHash('sha256').update(normalizeUsername(username)).digest('base64url').slice(0, 22)}`;

export function createLoginGuard(limiter: LimiterFactory, limits: LoginLimits = LOGIN_LIMITS): LoginGuard {
  const pairs = limiter('login-pair', limits.failuresPerPair, limits.pairWindowSeconds);
  const addresses = limiter('login-address', limits.failuresPerAddressPerDay, limits.addressWindowSeconds);
  // A pair over its count whose block is not written yet (the failure that reached it is still
  // being checked) will be blocked for the full block time.
  const pairWait = (pair: Usage) => retryAfterSeconds(Math.min(pair.resetMs, limits.pairBlockSeconds * 1000));

  return {
    async attempt(username, address, verify) {
      const key = pairKey(username, address);
      // The pair first: a blocked pair (a guessing run's every later attempt) costs one count and
      // spends nothing of its address's daily budget, which a real user there shares. A Redis that
      // hangs is still waited on once: after one timeout the limiters count in memory at once
      // (their breaker, store/limiter.ts).
      const pair = await pairs.consume(key);
      if (pair.exceeded) return { outcome: 'blocked', retryAfter: pairWait(pair) };
      const perAddress = await addresses.consume(address);
      if (perAddress.exceeded) {
        await pairs.reward(key);
        return { outcome: 'blocked', retryAfter: retryAfterSeconds(perAddress.resetMs) };
      }

      const value = await verify();
      if (value !== undefined && value !== null) {
        await Promise.all([pairs.delete(key), addresses.reward(address)]);
        return { outcome: 'success', value };
      }
      let retryAfter: number | undefined;
      if (pair.consumed >= limits.failuresPerPair) {
        await pairs.block(key, limits.pairBlockSeconds);
        retryAfter = limits.pairBlockSeconds;
      }
      if (perAddress.consumed >= limits.failuresPerAddressPerDay) {
        retryAfter = Math.max(retryAfter ?? 0, retryAfterSeconds(perAddress.resetMs));
      }
      return retryAfter === undefined ? { outcome: 'failure' } : { outcome: 'failure', retryAfter };
    },
  };
}
