/**
 * One private signing key for every test app of this machine, seeded through JWKS_FILE as an
 * operator seeds one: an app start then stores it instead of generating an RSA-2048 key of its
 * own. Generated once (kept in the temporary folder); a test of the key a first start generates
 * starts with `JWKS_FILE: ''`.
 *
 * @example env.JWKS_FILE = fixtureJwksFile();
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateSigningKey } from '../../src/keys/key-seed.js';

const FILE = path.join(os.tmpdir(), 'oauth-test-signing-key.json');

/** The path of the fixture's private JWKS (`{"keys": [one RS256 key]}`), written on first use. */
export function fixtureJwksFile(): string {
  if (!fs.existsSync(FILE)) {
    // Written whole, then renamed: a parallel first use reads one complete key set or the other.
    const partial = `${FILE}.${process.pid}`;
    fs.writeFileSync(partial, JSON.stringify({ keys: [{ ...generateSigningKey(), kid: 'test-fixture-rs256' }] }), { mode: 0o600 });
    fs.renameSync(partial, FILE);
  }
  return FILE;
}
