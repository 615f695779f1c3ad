/**
 * Rate-limit counters spent together cost one Redis round trip (issue 9: "rate limiting: one
 * Redis round trip per request, however many budgets apply"). rate-limiter-flexible increments
 * a counter with its `rlflxIncr` script, one command per budget; this view of the client
 * collects the increments issued in one turn of the event loop (a token request's address and
 * client_id budgets, spent with `Promise.all`, and those of every other request read in the
 * same turn) and sends them as one pipeline: under load, one write to Redis serves many
 * requests. Everything else goes to the client as it is, so readiness checks, timeouts and the
 * insurance limiter (limiter.ts) see the same client and the same failures.
 *
 * @example new RateLimiterRedis({ storeClient: batchedIncrements(redis), … })
 */
import type { Redis } from 'ioredis';

interface Call {
  args: string[];
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type WithIncr = { rlflxIncr(args: string[]): Promise<unknown> };

export function batchedIncrements(redis: Redis): Redis {
  let batch: Call[] | undefined;

  function flush() {
    const calls = batch!;
    batch = undefined;
    if (calls.length === 1) {
      (redis as unknown as WithIncr).rlflxIncr(calls[0]!.args).then(calls[0]!.resolve, calls[0]!.reject);
      return;
    }
    const pipeline = redis.pipeline();
    for (const call of calls) (pipeline as unknown as WithIncr).rlflxIncr(call.args);
    pipeline.exec().then((results) => {
      calls.forEach((call, i) => {
        const [error, value] = results?.[i] ?? [new Error('Connection is closed.'), undefined];
        if (error) call.reject(error);
        else call.resolve(value);
      });
    }, (error: unknown) => { for (const call of calls) call.reject(error); });
  }

  function increment(args: string[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (!batch) {
        batch = [];
        setImmediate(flush); // after this turn's I/O callbacks: the other requests that arrived with this one
      }
      batch.push({ args, resolve, reject });
    });
  }

  return new Proxy(redis, {
    get(target, property) {
      if (property === 'rlflxIncr') return increment;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
