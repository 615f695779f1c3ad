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
 * Through Sentinel (REDIS_SENTINELS, redis-sentinel.ts) the client asks the Sentinels for the
 * primary, and asks again at every reconnection: after a failover it finds the promoted replica
 * by itself. It also listens for Sentinel's `+switch-master` and leaves a demoted primary at
 * once (redis-sentinel.ts `followFailovers`). Meanwhile commands fail at once (no offline
 * queue): requests get 503, limits count in memory (limiter.ts).
 *
 * Commands are auto-pipelined: those issued in one turn of the event loop (by every request
 * read in that turn: their rate-limit increments, session reads, …) go to Redis in one write
 * (rate limiting takes one Redis round trip per request, however many budgets apply; under
 * load, one round trip serves many requests: docs/rate-limits.md). A MULTI stays a transaction of its own.
 *
 * @example const redis = await connectRedis(url, { redisCommandMs: 1000, redisConnectMs: 2000 });
 */
import type { Redis, RedisOptions } from 'ioredis';
import { ConfigError } from '../config.js';
import type { RedisSentinel, Timeouts } from '../config.js';
import { checkSentinels, followFailovers, sentinelState } from './redis-sentinel.js';
import { within } from './store-failure.js';

export type RedisTimeouts = Pick<Timeouts, 'redisCommandMs' | 'redisConnectMs'>;

export const DEFAULT_REDIS_TIMEOUTS: RedisTimeouts = { redisCommandMs: 1000, redisConnectMs: 2000 };

/** How long readiness asks the Sentinels what they see (within its bound on a state, health.ts STATE_TIMEOUT_MS). */
const SENTINEL_STATE_MS = 600;

/** Where Redis is: REDIS_URL, or the Sentinels that know the primary. */
export type RedisTarget = string | RedisSentinel;

/** `config`'s Redis, if it has one. */
export const redisTarget = (config: { redisUrl: string | undefined; redisSentinel: RedisSentinel | undefined }): RedisTarget | undefined => config.redisUrl ?? config.redisSentinel;

export async function connectRedis(target: RedisTarget, timeouts: RedisTimeouts = DEFAULT_REDIS_TIMEOUTS): Promise<Redis> {
  // Loaded only when REDIS_URL or REDIS_SENTINELS is set: no Redis, no ioredis in memory.
  const { Redis } = await import('ioredis');
  const sentinel = typeof target === 'string' ? undefined : target;
  if (sentinel) await checkSentinels(sentinel, timeouts.redisConnectMs);
  const where: RedisOptions = sentinel
    ? {
      sentinels: sentinel.sentinels.map(({ host, port }) => ({ host, port })),
      name: sentinel.name,
      sentinelPassword: sentinel.password,
      password: sentinel.serverPassword,
      sentinelCommandTimeout: timeouts.redisConnectMs,
    }
    : {};
  const options: RedisOptions = {
    ...where,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: timeouts.redisCommandMs * 2,
    connectTimeout: timeouts.redisConnectMs,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    enableAutoPipelining: true,
  };
  const redis = typeof target === 'string' ? new Redis(target, options) : new Redis(options);
  // ioredis reconnects by itself; without a listener a lost connection would be an uncaught error.
  redis.on('error', () => {});
  let refused: Error | undefined; // the server's own answer (a refused password): the rejection may only say "Connection is closed"
  const firstError = (error: Error) => { refused ??= error; };
  redis.on('error', firstError);
  try {
    // Through Sentinel each attempt asks the Sentinels first, and ioredis retries them for ever.
    await (sentinel ? within(2 * timeouts.redisConnectMs, redis.connect()) : redis.connect());
  } catch (error) {
    redis.disconnect();
    const auth = [refused, error as Error].find((e) => e && /\b(NOAUTH|WRONGPASS)\b|ERR AUTH|invalid (username-)?password/i.test(e.message));
    if (auth) {
      const variable = sentinel ? 'REDIS_PASSWORD' : 'REDIS_URL';
      const given = sentinel ? sentinel.serverPassword !== undefined : new URL(target as string).password !== '';
      throw new ConfigError(variable, `${given ? 'has a password the Redis server refuses' : 'needs the Redis server\'s password'} (${auth.message})`);
    }
    const where = sentinel ? `the primary "${sentinel.name}" that REDIS_SENTINELS name` : 'REDIS_URL';
    // The socket's own error says why (ECONNREFUSED, ENOTFOUND); the rejection often only "Connection is closed".
    const reason = refused ?? error as Error;
    throw new Error(`cannot connect to ${where}: ${reason.message}`, { cause: reason });
  } finally {
    redis.off('error', firstError);
  }
  if (sentinel) await followFailovers(sentinel, redis, timeouts.redisConnectMs);
  return redis;
}

/** What readiness says of a failing Redis beside its name: what `sentinel` sees; undefined without Sentinel. */
export function redisState(redis: Redis, sentinel: RedisSentinel | undefined): (() => Promise<string>) | undefined {
  return sentinel && (() => sentinelState(sentinel, redis, SENTINEL_STATE_MS));
}
