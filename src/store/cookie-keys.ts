/**
 * The keys that sign cookies: COOKIE_KEYS (production), or generated once and kept in
 * DATA_DIR/keys.json, so restarts keep sessions valid. The keys that sign tokens live in the
 * database (src/keys/); an older keys.json may still hold the ones generated before that, which
 * the first start stores there (keys/key-seed.ts).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

export interface CookieKeys {
  readonly cookieKeys: string[];
}

/** Where the generated cookie keys are kept (keys/key-seed.ts reads an earlier version's signing keys there). */
export const keysFile = (dataDir: string) => path.join(dataDir, 'keys.json');

function generatedKeys(dataDir: string): CookieKeys {
  const file = keysFile(dataDir);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const keys: CookieKeys = { cookieKeys: [randomBytes(32).toString('base64url')] };
    try {
      fs.writeFileSync(file, JSON.stringify(keys, null, 2), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Another instance sharing DATA_DIR won the race: use its keys.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as CookieKeys;
}

export function loadCookieKeys(config: Config): CookieKeys {
  return { cookieKeys: config.cookieKeys ? [...config.cookieKeys] : generatedKeys(config.dataDir).cookieKeys };
}
