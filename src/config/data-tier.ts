/**
 * The production data tier (docs/production-data-tier.md): PostgreSQL behind a transaction
 * pooler, with a direct URL for what needs a session; Redis found through Sentinel.
 *
 * @example const { databasePooler, redisSentinel } = loadConfig(process.env);
 */
import { ConfigError, read, url } from './env.js';
import type { Env } from './env.js';

/** Where Sentinel is asked for the Redis primary, and the name it monitors that primary under. */
export interface RedisSentinel {
  readonly sentinels: readonly { readonly host: string; readonly port: number }[];
  readonly name: string;
  /** REDIS_SENTINEL_PASSWORD: the Sentinels' own. */
  readonly password: string | undefined;
  /** REDIS_PASSWORD: the Redis servers' (primary and replicas) that the Sentinels name. */
  readonly serverPassword: string | undefined;
}

/** The data tier's settings. */
export interface DataTier {
  /** DATABASE_DIRECT_URL: PostgreSQL itself, for what needs a session (migrations); unset = DATABASE_URL. */
  readonly databaseDirectUrl: string | undefined;
  /** DATABASE_POOLER: `pgbouncer` when DATABASE_URL is a transaction pooler. */
  readonly databasePooler: 'pgbouncer' | undefined;
  /** REDIS_SENTINELS, REDIS_SENTINEL_NAME, REDIS_SENTINEL_PASSWORD, REDIS_PASSWORD: Redis found through Sentinel. */
  readonly redisSentinel: RedisSentinel | undefined;
}

/** One `host:port` of REDIS_SENTINELS (an IPv6 address in brackets: `[::1]:26379`). */
function sentinelAddress(entry: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([\w.-]+)):(\d{1,5})$/.exec(entry);
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65535) throw new ConfigError('REDIS_SENTINELS', `must be a comma-separated list of host:port, got "${entry}"`);
  return Object.freeze({ host: match[1] ?? match[2]!, port });
}

/**
 * The production data tier (docs/production-data-tier.md): PostgreSQL behind a transaction
 * pooler, with a direct URL for what needs a session; Redis found through Sentinel. Each
 * setting needs its partners, and a half-set group names the variable that is missing.
 */
export function dataTier(env: Env, databaseUrl: string | undefined, redisUrl: string | undefined): DataTier {
  const databaseDirectUrl = url(env, 'DATABASE_DIRECT_URL', ['postgres:', 'postgresql:']);
  const pooler = read(env, 'DATABASE_POOLER')?.toLowerCase() ?? 'none';
  if (pooler !== 'none' && pooler !== 'pgbouncer') throw new ConfigError('DATABASE_POOLER', `must be pgbouncer or none, got "${pooler}"`);
  if (!databaseUrl && (databaseDirectUrl || pooler !== 'none')) {
    throw new ConfigError(databaseDirectUrl ? 'DATABASE_DIRECT_URL' : 'DATABASE_POOLER', 'needs DATABASE_URL (the embedded database has no pooler)');
  }
  if (pooler === 'pgbouncer' && !databaseDirectUrl) {
    throw new ConfigError('DATABASE_DIRECT_URL', 'is required with DATABASE_POOLER=pgbouncer: migrations hold a session-level advisory lock, which a transaction pooler cannot keep');
  }
  const sentinels = read(env, 'REDIS_SENTINELS');
  const name = read(env, 'REDIS_SENTINEL_NAME');
  const password = read(env, 'REDIS_SENTINEL_PASSWORD');
  const serverPassword = read(env, 'REDIS_PASSWORD');
  if (serverPassword !== undefined && redisUrl !== undefined) {
    throw new ConfigError('REDIS_PASSWORD', 'is for Redis found through REDIS_SENTINELS; with REDIS_URL the password goes in the URL (redis://:password@host:6379)');
  }
  if (sentinels === undefined && serverPassword !== undefined) throw new ConfigError('REDIS_SENTINELS', 'is required with REDIS_PASSWORD');
  if (sentinels === undefined && (name !== undefined || password !== undefined)) {
    throw new ConfigError('REDIS_SENTINELS', `is required with ${name !== undefined ? 'REDIS_SENTINEL_NAME' : 'REDIS_SENTINEL_PASSWORD'}`);
  }
  if (sentinels !== undefined && name === undefined) throw new ConfigError('REDIS_SENTINEL_NAME', 'is required with REDIS_SENTINELS: the name Sentinel monitors the primary under');
  if (sentinels !== undefined && redisUrl !== undefined) throw new ConfigError('REDIS_SENTINELS', 'set REDIS_URL or REDIS_SENTINELS, not both');
  if (name !== undefined && !/^[\w.-]{1,128}$/.test(name)) throw new ConfigError('REDIS_SENTINEL_NAME', `must be 1-128 characters of letters, digits, _ . -, got "${name}"`);
  return {
    databaseDirectUrl,
    databasePooler: pooler === 'pgbouncer' ? 'pgbouncer' : undefined,
    redisSentinel: sentinels === undefined ? undefined : Object.freeze({
      sentinels: Object.freeze(sentinels.split(',').map((entry) => sentinelAddress(entry.trim()))),
      name: name!,
      password,
      serverPassword,
    }),
  };
}
