/**
 * Counters with a time window (rate-limiter-flexible), shared by every instance through Redis
 * or kept in process memory in the embedded mode. One small seam, {@link Limiter}, so the rate
 * limits and the login guard never see which store holds their counters.
 *
 * Redis unavailable: each Redis limiter carries a per-process insurance limiter (memory, same
 * points and window) that counts while Redis cannot. Limits stay enforced, per instance, never
 * lifted; when Redis answers again its counters are used again. A dead Redis fails fast (the
 * client has no offline queue; the limiter does not even try while the connection is not
 * ready), and a Redis that stops answering is given up on after {@link REDIS_TIMEOUT_MS}.
 *
 * @example const limiter = createLimiterFactory({ redis, keyPrefix: 'oauth:rl:' }); const perIp = limiter('token-address', 5, 60);
 * @see https://github.com/animir/node-rate-limiter-flexible/wiki/Insurance-Strategy
 */
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { batchedIncrements } from './batched-increments.js';

/** How long a Redis command may take before the insurance limiter answers instead (REDIS_COMMAND_TIMEOUT_MS's default). */
export const REDIS_TIMEOUT_MS = 1000;

/** Whole seconds until `ms` has passed, at least 1: what `Retry-After` says (RFC 9110 §10.2.3). */
export const retryAfterSeconds = (ms: number) => Math.max(Math.ceil(ms / 1000), 1);

/** A key's count in the current window. */
export interface Usage {
  /** Requests (or failures) counted in the window, this one included. */
  readonly consumed: number;
  /** What is left of the window's points (0 when exceeded). */
  readonly remaining: number;
  /** Milliseconds until the window (or a block) ends and the count starts again. */
  readonly resetMs: number;
  /** True when this one went over the points. */
  readonly exceeded: boolean;
}

export interface Limiter {
  /** Points a key may consume in one window. */
  readonly points: number;
  /** Counts one for `key`; an exceeded window is a result, not an error. */
  consume(key: string): Promise<Usage>;
  /** Gives one back (an attempt that turned out not to count). */
  reward(key: string): Promise<void>;
  /** Holds `key` over its limit for `seconds`, whatever it counted. */
  block(key: string, seconds: number): Promise<void>;
  /** Forgets `key`. */
  delete(key: string): Promise<void>;
}

/**
 * Where counters live: Redis under `keyPrefix` (each call given up on after `timeoutMs`, default
 * {@link REDIS_TIMEOUT_MS}), or (undefined) this process's memory.
 */
export type LimiterStore = { readonly redis: Redis; readonly keyPrefix: string; readonly timeoutMs?: number } | undefined;

/** Builds limiters on one store: `limiter(name, points, durationSeconds)`. */
export type LimiterFactory = (name: string, points: number, duration: number) => Limiter;

function usage(res: RateLimiterRes, points: number, exceeded: boolean): Usage {
  return { consumed: res.consumedPoints, remaining: Math.max(points - res.consumedPoints, 0), resetMs: Math.max(res.msBeforeNext, 0), exceeded };
}

function wrap(engine: RateLimiterAbstract, points: number): Limiter {
  return {
    points,
    async consume(key) {
      try {
        return usage(await engine.consume(key), points, false);
      } catch (error) {
        if (error instanceof RateLimiterRes) return usage(error, points, true);
        throw error;
      }
    },
    async reward(key) { await engine.reward(key, 1); },
    async block(key, seconds) { await engine.block(key, seconds); },
    async delete(key) { await engine.delete(key); },
  };
}

export function createLimiterFactory(store: LimiterStore): LimiterFactory {
  // Increments of one tick, whichever limiter they count for, share one round trip.
  const storeClient = store && batchedIncrements(store.redis);
  return (name, points, duration) => {
    const memory = new RateLimiterMemory({ keyPrefix: name, points, duration });
    if (!store) return wrap(memory, points);
    // The insurance belongs to the wrapper alone: it answers every failure (refused, timed out,
    // not ready). Given to the Redis limiter too, a command that times out in the client
    // (REDIS_COMMAND_TIMEOUT_MS) as the wrapper does would be counted twice in memory.
    const redis = new RateLimiterRedis({
      storeClient,
      keyPrefix: `${store.keyPrefix}${name}`,
      points,
      duration,
      rejectIfRedisNotReady: true,
    });
    return wrap(new RLWrapperTimeouts({ limiter: redis, timeoutMs: store.timeoutMs ?? REDIS_TIMEOUT_MS, insuranceLimiter: memory }), points);
  };
}
