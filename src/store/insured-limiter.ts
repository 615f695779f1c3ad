/**
 * A Redis limiter insured by one in process memory (rate-limiter-flexible's insurance strategy),
 * with Redis behind its breaker: while Redis is down, hung or refusing, or the breaker is open
 * after a timeout (`storeGuard`, store-failure.ts), the memory limiter counts instead, at once.
 * So a Redis that stops answering costs one timeout, not one per budget per request (issue 10:
 * "a request never waits on a store longer than its timeout plus a small margin"), and the
 * limits keep holding meanwhile.
 *
 * @example const engine = insured(new RateLimiterRedis(…), new RateLimiterMemory(…), storeGuard('redis'));
 * @see https://github.com/animir/node-rate-limiter-flexible/wiki/Insurance-Strategy
 */
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { StoreGuard } from './store-failure.js';

/** What a limiter does with a store: rate-limiter-flexible's calls, as used here. */
export interface Engine {
  consume(key: string): Promise<RateLimiterRes>;
  reward(key: string): Promise<RateLimiterRes>;
  block(key: string, seconds: number): Promise<RateLimiterRes>;
  delete(key: string): Promise<boolean>;
}

/**
 * Redis through its breaker, the insurance limiter whenever Redis does not answer (down, hung,
 * refused, or the breaker open after a timeout). A refusal is Redis answering: it stands.
 */
export function insured(redis: Engine, insurance: Engine, guard: StoreGuard): Engine {
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
