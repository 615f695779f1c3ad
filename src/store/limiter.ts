/**
 * Counters with a time window (rate-limiter-flexible), shared by every instance through Redis
 * or kept in process memory in the embedded mode. One small seam, {@link Limiter}, so the rate
 * limits and the login guard never see which store holds their counters.
 *
 * Redis unavailable: each Redis limiter carries a per-process insurance limiter (memory, same
 * points and window) that counts while Redis cannot. Limits stay enforced, per instance, never
 * lifted; when Redis answers again its counters are used again. A dead Redis fails fast (the
 * client has no offline queue; the limiter does not even try while the connection is not
 * ready). A Redis that stops answering is waited on once (a request never waits on a store
 * longer than its timeout plus a small margin): every call goes through the Redis breaker
 * (`storeGuard`, store-failure.ts; the app passes the one its sessions use, which bounds each
 * call at REDIS_COMMAND_TIMEOUT_MS), so once a command has timed out counters go straight to
 * memory until Redis answers a probe again ({@link insured}).
 *
 * @example const limiter = createLimiterFactory({ redis, keyPrefix: 'oauth:rl:', guard: storeGuard('redis', HUNG_PAUSE_MS, 1000) }); const perIp = limiter('token-address', 5, 60);
 * @see https://github.com/animir/node-rate-limiter-flexible/wiki/Insurance-Strategy
 */
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { StoreGuard } from './store-failure.js';

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
  /**
   * A key this limiter refused and whose window has not ended yet, answered without counting
   * (no store round trip); undefined otherwise. Only a limiter made with `holdRefusals` keeps
   * its refusals: see {@link LimiterOptions}.
   */
  refusedHere(key: string): Usage | undefined;
}

export interface LimiterOptions {
  /**
   * Remember, in this process, each key refused until its window ends, and refuse it again
   * without asking the store (a flood of refused requests then costs no round trip: a 429 stays
   * far cheaper than a served request). Exact for budgets that are
   * only ever consumed (a fixed window's count only rises until it ends); not for keys that are
   * rewarded, blocked or deleted (the client budget, the login guard).
   */
  readonly holdRefusals?: boolean;
}

/**
 * Where counters live: Redis under `keyPrefix`, each call through `guard` (that Redis's breaker,
 * which bounds each call: `storeGuard('redis', pause, REDIS_COMMAND_TIMEOUT_MS)`); or
 * (undefined) this process's memory.
 */
export type LimiterStore = { readonly redis: Redis; readonly keyPrefix: string; readonly guard: StoreGuard } | undefined;

/** Builds limiters on one store: `limiter(name, points, durationSeconds)`. */
export type LimiterFactory = (name: string, points: number, duration: number, options?: LimiterOptions) => Limiter;

/** `factory`'s limiters, each refusal told to `counted` with the limiter's name (its budget): the metrics count them. */
export function countingRefusals(factory: LimiterFactory, counted: (budget: string) => void): LimiterFactory {
  return (name, points, duration, options) => {
    const limiter = factory(name, points, duration, options);
    return {
      points: limiter.points,
      reward: (key) => limiter.reward(key),
      block: (key, seconds) => limiter.block(key, seconds),
      delete: (key) => limiter.delete(key),
      refusedHere: (key) => limiter.refusedHere(key),
      async consume(key) {
        const usage = await limiter.consume(key);
        if (usage.exceeded) counted(name);
        return usage;
      },
    };
  };
}

/** Refusals held at most; past that, ended windows are dropped, then (a flood of keys) all of them. */
const HELD_REFUSALS = 10_000;

/** The keys a limiter refused, each until its window ends. */
function heldRefusals(points: number) {
  const until = new Map<string, number>();
  return {
    hold(key: string, usage: Usage): void {
      if (until.size >= HELD_REFUSALS) {
        const now = Date.now();
        for (const [held, end] of until) if (end <= now) until.delete(held);
        if (until.size >= HELD_REFUSALS) until.clear(); // the store still answers: only slower
      }
      until.set(key, Date.now() + usage.resetMs);
    },
    forget(key: string): void {
      until.delete(key);
    },
    refused(key: string): Usage | undefined {
      const end = until.get(key);
      if (end === undefined) return undefined;
      const resetMs = end - Date.now();
      if (resetMs > 0) return { consumed: points + 1, remaining: 0, resetMs, exceeded: true };
      until.delete(key);
      return undefined;
    },
  };
}

/** What a limiter does with a store: rate-limiter-flexible's calls, as used here. */
interface Engine {
  consume(key: string): Promise<RateLimiterRes>;
  reward(key: string): Promise<RateLimiterRes>;
  block(key: string, seconds: number): Promise<RateLimiterRes>;
  delete(key: string): Promise<boolean>;
}

/**
 * Redis through its breaker, the insurance limiter whenever Redis does not answer (down, hung,
 * refused, or the breaker open after a timeout). A refusal is Redis answering: it stands.
 */
function insured(redis: Engine, insurance: Engine, guard: StoreGuard): Engine {
  async function either<T>(fromRedis: () => Promise<T>, fromMemory: () => Promise<T>): Promise<T> {
    try {
      return await guard(fromRedis);
    } catch (error) {
      if (error instanceof RateLimiterRes) throw error;
      return fromMemory();
    }
  }
  return {
    consume: (key) => either(() => redis.consume(key), () => insurance.consume(key)),
    reward: (key) => either(() => redis.reward(key), () => insurance.reward(key)),
    block: (key, seconds) => either(() => redis.block(key, seconds), () => insurance.block(key, seconds)),
    delete: (key) => either(() => redis.delete(key), () => insurance.delete(key)),
  };
}

function usage(res: RateLimiterRes, points: number, exceeded: boolean): Usage {
  return { consumed: res.consumedPoints, remaining: Math.max(points - res.consumedPoints, 0), resetMs: Math.max(res.msBeforeNext, 0), exceeded };
}

function wrap(engine: Engine, points: number, options: LimiterOptions = {}): Limiter {
  const held = options.holdRefusals ? heldRefusals(points) : undefined;
  return {
    points,
    async consume(key) {
      const refused = held?.refused(key);
      if (refused) return refused;
      try {
        return usage(await engine.consume(key), points, false);
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        const over = usage(error, points, true);
        held?.hold(key, over);
        return over;
      }
    },
    async reward(key) { await engine.reward(key); },
    async block(key, seconds) { await engine.block(key, seconds); },
    async delete(key) {
      held?.forget(key);
      await engine.delete(key);
    },
    refusedHere: (key) => held?.refused(key),
  };
}

export function createLimiterFactory(store: LimiterStore): LimiterFactory {
  const inMemory = (name: string, points: number, duration: number) => new RateLimiterMemory({ keyPrefix: name, points, duration });
  if (!store) return (name, points, duration, options) => wrap(inMemory(name, points, duration), points, options);
  // One breaker for every limiter of this Redis: a timeout seen by one sends all of them to memory.
  const { guard } = store;
  // Increments of one turn, whichever limiter they count for, share one round trip: the client
  // pipelines them (store/redis.ts, auto-pipelining).
  return (name, points, duration, options) => {
    // The insurance is `insured`'s alone: it answers every failure (refused, timed out, not ready,
    // breaker open). Given to the Redis limiter too, a failure would be counted twice in memory.
    const redis = new RateLimiterRedis({
      storeClient: store.redis,
      keyPrefix: `${store.keyPrefix}${name}`,
      points,
      duration,
      rejectIfRedisNotReady: true,
    });
    return wrap(insured(redis, inMemory(name, points, duration), guard), points, options);
  };
}
