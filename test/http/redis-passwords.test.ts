/**
 * Redis that asks for passwords. Through Sentinel, the Sentinels ask for theirs
 * (REDIS_SENTINEL_PASSWORD) and the primary and replica for theirs (REDIS_PASSWORD): with both,
 * the service starts and a flow keeps its session in Redis; a password missing or refused stops
 * start-up naming the variable to fix, as does a REDIS_URL without the server's password.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { ConfigError } from '../../src/config.js';
import type { RedisSentinel } from '../../src/config.js';
import { connectRedis } from '../../src/store/redis.js';
import { createUser, obtainTokens, registerClient } from '../helpers/fixtures.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { startSentinelSet } from '../helpers/redis-sentinel.js';
import type { SentinelSet } from '../helpers/redis-sentinel.js';
import { describeWith, REDIS_SENTINEL } from '../helpers/system-tool.js';
import { startTestApp } from '../helpers/test-app.js';

const SERVER_PASSWORD = 'server-secret';
const SENTINEL_PASSWORD = 'sentinel-secret';

/** What start-up says: the variable to fix and its message, or `connected`. */
async function startUp(target: string | RedisSentinel): Promise<{ variable: string; message: string } | 'connected'> {
  try {
    const redis = await connectRedis(target);
    redis.disconnect();
    return 'connected';
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return { variable: (error as ConfigError).variable, message: (error as Error).message };
  }
}

describeWith(REDIS_SENTINEL)('Redis through Sentinel, with passwords', () => {
  let set: SentinelSet;
  beforeAll(async () => { set = await startSentinelSet({ serverPassword: SERVER_PASSWORD, sentinelPassword: SENTINEL_PASSWORD }); }, 90_000);
  afterAll(async () => { await set?.stop(); });

  test('with both: the service is ready and a flow keeps its session on the primary', async () => {
    expect(set.env).toMatchObject({ REDIS_PASSWORD: SERVER_PASSWORD, REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD });
    const t = await startTestApp({ env: set.env });
    try {
      expect((await fetch(`${t.baseUrl}/healthz/ready`)).status).toBe(200);
      const tokens = await obtainTokens(t, await registerClient(t), await createUser(t));
      expect(tokens.access_token).toEqual(expect.any(String));
      const primary = new Redis({ port: set.primary.port, password: SERVER_PASSWORD, lazyConnect: true });
      try {
        await primary.connect();
        expect((await primary.keys(`${t.env.REDIS_KEY_PREFIX}*`)).length).toBeGreaterThan(0);
      } finally {
        primary.disconnect();
      }
    } finally {
      await t.close();
    }
  });

  test('a password missing or refused stops start-up, naming the variable', async () => {
    const sentinels = set.sentinelPorts.map((port) => ({ host: '127.0.0.1', port }));
    const target = (password: string | undefined, serverPassword: string | undefined): RedisSentinel => ({ sentinels, name: set.name, password, serverPassword });

    expect(await startUp(target(SENTINEL_PASSWORD, SERVER_PASSWORD))).toBe('connected');
    expect(await startUp(target(undefined, SERVER_PASSWORD))).toEqual({ variable: 'REDIS_SENTINEL_PASSWORD', message: expect.stringMatching(/is needed: the Sentinels ask for one/) });
    expect(await startUp(target('wrong', SERVER_PASSWORD))).toEqual({ variable: 'REDIS_SENTINEL_PASSWORD', message: expect.stringMatching(/the Sentinels refuse it/) });
    expect(await startUp(target(SENTINEL_PASSWORD, undefined))).toEqual({ variable: 'REDIS_PASSWORD', message: expect.stringMatching(/needs the Redis server's password \(.*NOAUTH/) });
    expect(await startUp(target(SENTINEL_PASSWORD, 'wrong'))).toEqual({ variable: 'REDIS_PASSWORD', message: expect.stringMatching(/has a password the Redis server refuses \(.*WRONGPASS/) });
  }, 30_000);
});

describe('REDIS_URL to a Redis that asks for a password', () => {
  test('without it, or with another, start-up names REDIS_URL', async () => {
    const server = await startRedisServer({ args: ['--requirepass', SERVER_PASSWORD] });
    try {
      expect(await startUp(`redis://:${SERVER_PASSWORD}@127.0.0.1:${server.port}`)).toBe('connected');
      expect(await startUp(server.url)).toEqual({ variable: 'REDIS_URL', message: expect.stringMatching(/needs the Redis server's password \(.*NOAUTH/) });
      expect(await startUp(`redis://:wrong@127.0.0.1:${server.port}`)).toEqual({ variable: 'REDIS_URL', message: expect.stringMatching(/has a password the Redis server refuses \(.*WRONGPASS/) });
    } finally {
      await server.stop();
    }
  });
});
