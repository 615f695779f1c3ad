/**
 * src/config.ts, the production data tier's variables (docs/production-data-tier.md):
 * DATABASE_DIRECT_URL and DATABASE_POOLER, REDIS_SENTINELS, REDIS_SENTINEL_NAME and
 * REDIS_SENTINEL_PASSWORD, REDIS_PASSWORD. Each group needs its partners; every bad or half-set value is a
 * ConfigError naming the variable to fix.
 */
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { configError } from '../helpers/config-error.js';

const DATABASE_URL = 'postgresql://oauth@pgbouncer:6432/oauth';
const DIRECT = 'postgresql://oauth@postgres:5432/oauth';

describe('the data tier in the configuration', () => {
  test('unset: PostgreSQL itself on DATABASE_URL (migrations too), Redis on REDIS_URL', () => {
    expect(loadConfig({ DATABASE_URL: DIRECT, REDIS_URL: 'redis://cache:6379' })).toMatchObject({
      databaseUrl: DIRECT, databaseDirectUrl: undefined, databasePooler: undefined, redisUrl: 'redis://cache:6379', redisSentinel: undefined,
    });
    expect(loadConfig({ DATABASE_URL: DIRECT, DATABASE_POOLER: 'none' }).databasePooler).toBeUndefined();
  });

  test('PgBouncer in front: DATABASE_POOLER=pgbouncer with DATABASE_DIRECT_URL', () => {
    expect(loadConfig({ DATABASE_URL, DATABASE_DIRECT_URL: DIRECT, DATABASE_POOLER: 'PgBouncer' })).toMatchObject({
      databaseUrl: DATABASE_URL, databaseDirectUrl: DIRECT, databasePooler: 'pgbouncer',
    });
    // A direct URL alone (a session-mode pooler, or another route to the same server) is fine too.
    expect(loadConfig({ DATABASE_URL, DATABASE_DIRECT_URL: DIRECT })).toMatchObject({ databaseDirectUrl: DIRECT, databasePooler: undefined });
  });

  test('Sentinel: the list of host:port (IPv6 in brackets), the primary\'s name, optional passwords (the Sentinels\', the servers\'); frozen', () => {
    const config = loadConfig({ REDIS_SENTINELS: ' sentinel-a:26379,10.0.0.7:26380 , [::1]:26381', REDIS_SENTINEL_NAME: 'mymaster', REDIS_SENTINEL_PASSWORD: 's3cret', REDIS_PASSWORD: 'server' });
    expect(config.redisSentinel).toEqual({
      sentinels: [{ host: 'sentinel-a', port: 26379 }, { host: '10.0.0.7', port: 26380 }, { host: '::1', port: 26381 }],
      name: 'mymaster',
      password: 's3cret',
      serverPassword: 'server',
    });
    expect(config.redisUrl).toBeUndefined();
    expect(Object.isFrozen(config.redisSentinel)).toBe(true);
    expect(Object.isFrozen(config.redisSentinel!.sentinels[0])).toBe(true);
    expect(loadConfig({ REDIS_SENTINELS: 'localhost:26379', REDIS_SENTINEL_NAME: 'cache-1' }).redisSentinel?.password).toBeUndefined();
  });
});

describe('a bad or half-set value throws ConfigError naming the variable', () => {
  test.each<[string, Record<string, string>]>([
    ['DATABASE_DIRECT_URL', { DATABASE_URL, DATABASE_DIRECT_URL: 'not a url' }],
    ['DATABASE_DIRECT_URL', { DATABASE_URL, DATABASE_DIRECT_URL: 'postgresql://oauth@postgres:99999/oauth' }],
    ['DATABASE_DIRECT_URL', { DATABASE_URL, DATABASE_DIRECT_URL: 'mysql://oauth@db/oauth' }],
    ['DATABASE_DIRECT_URL', { DATABASE_DIRECT_URL: DIRECT }], // the embedded database has no pooler
    ['DATABASE_DIRECT_URL', { DATABASE_URL, DATABASE_POOLER: 'pgbouncer' }], // migrations need a session
    ['DATABASE_POOLER', { DATABASE_URL, DATABASE_DIRECT_URL: DIRECT, DATABASE_POOLER: 'pgpool' }],
    ['DATABASE_POOLER', { DATABASE_POOLER: 'pgbouncer' }],
    ['REDIS_SENTINELS', { REDIS_SENTINELS: 'sentinel-a', REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINELS', { REDIS_SENTINELS: 'sentinel-a:26379,', REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINELS', { REDIS_SENTINELS: 'sentinel-a:0', REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINELS', { REDIS_SENTINELS: 'sentinel-a:65536', REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINELS', { REDIS_SENTINELS: 'redis://sentinel-a:26379', REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINELS', { REDIS_SENTINELS: '::1:26379', REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINELS', { REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINELS', { REDIS_SENTINEL_PASSWORD: 's3cret' }],
    ['REDIS_SENTINELS', { REDIS_PASSWORD: 's3cret' }],
    ['REDIS_PASSWORD', { REDIS_PASSWORD: 's3cret', REDIS_URL: 'redis://cache:6379' }], // it goes in the URL
    ['REDIS_SENTINELS', { REDIS_SENTINELS: 'sentinel-a:26379', REDIS_SENTINEL_NAME: 'mymaster', REDIS_URL: 'redis://cache:6379' }],
    ['REDIS_SENTINEL_NAME', { REDIS_SENTINELS: 'sentinel-a:26379' }],
    ['REDIS_SENTINEL_NAME', { REDIS_SENTINELS: 'sentinel-a:26379', REDIS_SENTINEL_NAME: 'my master' }],
  ])('%s in %j', (variable, env) => {
    const error = configError(env);
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
  });

  test('the message says what is expected', () => {
    expect(configError({ REDIS_SENTINELS: 'a:1,b', REDIS_SENTINEL_NAME: 'm' }).message).toBe('REDIS_SENTINELS: must be a comma-separated list of host:port, got "b"');
    expect(configError({ DATABASE_URL, DATABASE_POOLER: 'pgbouncer' }).message).toMatch(/^DATABASE_DIRECT_URL: is required with DATABASE_POOLER=pgbouncer: migrations hold a session-level advisory lock/);
  });
});
