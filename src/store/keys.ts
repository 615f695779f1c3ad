/**
 * The provider's secrets: cookie-signing keys and the private JWKS that signs ID tokens.
 * Production supplies both (COOKIE_KEYS, JWKS_FILE); elsewhere they are generated once and
 * kept in DATA_DIR/keys.json, so restarts keep sessions and tokens valid.
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { JsonWebKey } from 'node:crypto';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';

export interface Keys {
  readonly cookieKeys: string[];
  readonly jwks: { keys: JsonWebKey[] };
}

/** A fresh RS256 signing key as a private JWK. */
export function generateSigningKey(): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

function readJwks(file: string): { keys: JsonWebKey[] } {
  let jwks: unknown;
  try {
    jwks = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError('JWKS_FILE', `cannot read a JSON key set from ${file}: ${(error as Error).message}`);
  }
  const keys = (jwks as { keys?: unknown }).keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.some((key) => typeof key !== 'object' || !('d' in key))) {
    throw new ConfigError('JWKS_FILE', `${file} must hold {"keys": [...]} with at least one private key`);
  }
  return { keys: keys as JsonWebKey[] };
}

function generatedKeys(dataDir: string): Keys {
  const file = path.join(dataDir, 'keys.json');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const keys: Keys = { cookieKeys: [randomBytes(32).toString('base64url')], jwks: { keys: [generateSigningKey()] } };
    try {
      fs.writeFileSync(file, JSON.stringify(keys, null, 2), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Another instance sharing DATA_DIR won the race: use its keys.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Keys;
}

export function loadKeys(config: Config): Keys {
  const generated = config.cookieKeys && config.jwksFile ? undefined : generatedKeys(config.dataDir);
  return {
    cookieKeys: config.cookieKeys ? [...config.cookieKeys] : generated!.cookieKeys,
    jwks: config.jwksFile ? readJwks(config.jwksFile) : generated!.jwks,
  };
}
