/**
 * The signing keys kept in the database (docs/signing-keys.md): the key their private parts are
 * sealed with, and how often an instance reads the key table.
 *
 * @example const { signingKeys } = loadConfig(process.env);
 */
import { ConfigError, duration, read } from './env.js';
import type { Env } from './env.js';

export interface SigningKeyConfig {
  /** KEYS_ENCRYPTION_KEY: 32 bytes sealing the keys' private parts; unset outside production = generated under `dataDir`. */
  readonly encryptionKey: Buffer | undefined;
  /** KEYS_POLL_INTERVAL_MS: how often an instance reads the key table for changes. */
  readonly pollIntervalMs: number;
  /** KEYS_RETIRE_LEEWAY: seconds a replaced key stays published after the last token it signed expired. */
  readonly retireLeeway: number;
}

/**
 * KEYS_ENCRYPTION_KEY as bytes: 64 hex digits, or base64 / base64url of 32 bytes
 * (`openssl rand -base64 32`). The value is a secret: an error never repeats it.
 */
export function encryptionKeyOf(raw: string, variable = 'KEYS_ENCRYPTION_KEY'): Buffer {
  const text = raw.trim();
  const bytes = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex')
    : /^[\w+/-]{43}=?$/.test(text) ? Buffer.from(text.replaceAll('+', '-').replaceAll('/', '_').replace(/=$/, ''), 'base64url') : undefined;
  if (bytes?.length !== 32) throw new ConfigError(variable, `must be 32 random bytes as 64 hex digits or base64 (openssl rand -base64 32); got ${text.length} characters`);
  return bytes;
}

export function signingKeyConfig(env: Env, production: boolean): SigningKeyConfig {
  const raw = read(env, 'KEYS_ENCRYPTION_KEY');
  if (production && raw === undefined) throw new ConfigError('KEYS_ENCRYPTION_KEY', 'is required when NODE_ENV=production');
  return Object.freeze({
    encryptionKey: raw === undefined ? undefined : encryptionKeyOf(raw),
    // At most a minute: every instance picks up a rotation within one.
    pollIntervalMs: duration(env, 'KEYS_POLL_INTERVAL_MS', 'ms', 30_000, 100, 60_000),
    retireLeeway: duration(env, 'KEYS_RETIRE_LEEWAY', 's', 300, 0, 86_400),
  });
}
