/**
 * Connects to Redis. Commands fail fast while the connection is down (no offline queue), so
 * a dead Redis surfaces as an error on the request that needed it, not as a hang.
 */
import { Redis } from 'ioredis';

export async function connectRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
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
