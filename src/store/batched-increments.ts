/**
 * Rate-limit counters spent together cost one Redis round trip (issue 9: "rate limiting: one
 * Redis round trip per request, however many budgets apply"). rate-limiter-flexible increments
 * a counter with its `rlflxIncr` script, one command per budget; this view of the client
 * collects the increments issued in one turn of the event loop (store/turn-batch.ts: a token
 * request's address and client_id budgets, spent with `Promise.all`, and those of every other
 * request read in the same turn) and sends them as one pipeline. Everything else goes to the
 * client as it is, so readiness checks, timeouts and the insurance limiter (limiter.ts) see the
 * same client and the same failures.
 *
 * @example new RateLimiterRedis({ storeClient: batchedIncrements(redis), … })
 */
import type { Redis } from 'ioredis';
import { turnBatch } from './turn-batch.js';
import type { Outcome } from './turn-batch.js';

type WithIncr = { rlflxIncr(args: string[]): Promise<unknown> };

export function batchedIncrements(redis: Redis): Redis {
  const increment = turnBatch<string[], unknown>(async (calls) => {
    if (calls.length === 1) return [[null, await (redis as unknown as WithIncr).rlflxIncr(calls[0]!)]];
    const pipeline = redis.pipeline();
    for (const args of calls) (pipeline as unknown as WithIncr).rlflxIncr(args);
    // ioredis answers null for a pipeline it could not send: the connection is gone.
    return ((await pipeline.exec()) ?? calls.map(() => [new Error('Connection is closed.'), undefined])) as Outcome<unknown>[];
  });

  return new Proxy(redis, {
    get(target, property) {
      if (property === 'rlflxIncr') return increment;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
