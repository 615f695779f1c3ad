/**
 * The provider's cookie-signing keys: COOKIE_KEYS (production), or generated once and kept in
 * DATA_DIR/keys.json, so restarts keep sessions valid. The keys that sign tokens live in the
 * database (store/signing-keys.ts); an older keys.json may still hold the ones generated before
 * that, which the first start stores there ({@link jwksFromDataDir}).
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { JsonWebKey } from 'node:crypto';
import type { Config } from '../config.js';

export interface Keys {
  readonly cookieKeys: string[];
}

/** A fresh RS256 signing key as a private JWK. */
export function generateSigningKey(): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

const keysFile = (dataDir: string) => path.join(dataDir, 'keys.json');

function generatedKeys(dataDir: string): Keys {
  const file = keysFile(dataDir);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const keys: Keys = { cookieKeys: [randomBytes(32).toString('base64url')] };
    try {
      fs.writeFileSync(file, JSON.stringify(keys, null, 2), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Another instance sharing DATA_DIR won the race: use its keys.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Keys;
}

/** The private JWKS an earlier version generated into DATA_DIR/keys.json, if there is one. */
export function jwksFromDataDir(dataDir: string): { file: string; jwks: unknown } | undefined {
  const file = keysFile(dataDir);
  if (!fs.existsSync(file)) return undefined;
  const { jwks } = JSON.parse(fs.readFileSync(file, 'utf8')) as { jwks?: unknown };
  return jwks === undefined ? undefined : { file, jwks };
}

export function loadKeys(config: Config): Keys {
  return { cookieKeys: config.cookieKeys ? [...config.cookieKeys] : generatedKeys(config.dataDir).cookieKeys };
}
