/**
 * Connects to Redis, with every call bounded:
 * - no offline queue: while the connection is down a command fails at once instead of waiting;
 * - `commandTimeout`: a Redis that stops answering (a hung host, a full network buffer) fails
 *   the command; every call the service makes is bounded at `redisCommandMs` by the Redis guard
 *   (store-failure.ts `storeGuard`, which also reads an answer that arrived while this process
 *   was stalled), so the client's own timer, which fires before the loop reads the socket, is a
 *   backstop at twice that;
 * - `connectTimeout`: opening a connection gives up after `redisConnectMs`;
 * - one retry per request at most; reconnection goes on in the background, at most every 2 s.
 * A failure then surfaces on the request that needed Redis, as a 503 (store-failure.ts).
 *
 * Commands are auto-pipelined: those issued in one turn of the event loop (by every request
 * read in that turn: their rate-limit increments, session reads, …) go to Redis in one write
 * (issue 9: "rate limiting: one Redis round trip per request, however many budgets apply"; under
 * load, one round trip serves many requests). A MULTI stays a transaction of its own.
 *
 * @example const redis = await connectRedis(url, { redisCommandMs: 1000, redisConnectMs: 2000 });
 */
import type { Redis } from 'ioredis';
import type { Timeouts } from '../config.js';

export type RedisTimeouts = Pick<Timeouts, 'redisCommandMs' | 'redisConnectMs'>;

export const DEFAULT_REDIS_TIMEOUTS: RedisTimeouts = { redisCommandMs: 1000, redisConnectMs: 2000 };

export async function connectRedis(url: string, timeouts: RedisTimeouts = DEFAULT_REDIS_TIMEOUTS): Promise<Redis> {
  // Loaded only when REDIS_URL is set (issue 9 "Memory").
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: timeouts.redisCommandMs * 2,
    connectTimeout: timeouts.redisConnectMs,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    enableAutoPipelining: true,
  });
  // ioredis reconnects by itself; without a listener a lost connection would be an uncaught error.
  redis.on('error', () => {});
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw new Error(`cannot connect to REDIS_URL: ${(error as Error).message}`, { cause: error });
  }
  return redis;
}
