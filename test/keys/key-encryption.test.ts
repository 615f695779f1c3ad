/**
 * The seal on the signing keys' private parts (src/keys/key-encryption.ts): AES-256-GCM under
 * KEYS_ENCRYPTION_KEY, or a key generated once into DATA_DIR; a wrong key, a sealed key moved to
 * another row, and damage are each a ConfigError naming KEYS_ENCRYPTION_KEY; nothing of the
 * private key shows in what is stored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { keyEncryption } from '../../src/keys/key-encryption.js';
import { generateSigningKey } from '../../src/keys/key-seed.js';
import { configErrorOf } from '../helpers/config-error.js';
import { tempDataDir } from '../helpers/services.js';

const dirs: string[] = [];
const configFor = (env: Record<string, string> = {}) => {
  const dataDir = tempDataDir('oauth-key-encryption');
  dirs.push(dataDir);
  return loadConfig({ DATA_DIR: dataDir, ...env });
};
afterAll(() => { for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true }); });


const jwk = generateSigningKey();
const kid = String(jwk.kid);

describe('KEYS_ENCRYPTION_KEY set', () => {
  const config = configFor({ KEYS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') });

  test('a sealed key opens to the same JWK; it holds none of the private values, and each seal is new', () => {
    const seal = keyEncryption(config);
    const sealed = seal.seal(kid, jwk);
    expect(sealed).toMatch(new RegExp(`^v1\\.${seal.id}\\.[\\w-]{16}\\.[\\w-]+\\.[\\w-]{22}$`));
    expect(seal.open(kid, sealed)).toEqual(jwk);
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi'] as const) expect(sealed).not.toContain(String(jwk[member]));
    expect(seal.seal(kid, jwk)).not.toBe(sealed); // a fresh IV each time
    expect(fs.existsSync(path.join(config.dataDir, 'keys-encryption-key'))).toBe(false); // nothing generated
  });

  test('another key is refused, naming KEYS_ENCRYPTION_KEY and both key ids (never a key)', () => {
    const sealed = keyEncryption(config).seal(kid, jwk);
    const other = configFor({ KEYS_ENCRYPTION_KEY: 'cd'.repeat(32) });
    const error = configErrorOf(() => keyEncryption(other).open(kid, sealed));
    expect(error.variable).toBe('KEYS_ENCRYPTION_KEY');
    expect(error.message).toContain(keyEncryption(config).id);
    expect(error.message).toContain(keyEncryption(other).id);
    expect(error.message).toMatch(/sealed with another encryption key/);
    expect(error.message).not.toContain('cd'.repeat(32));
  });

  test('a sealed key moved to another kid, or altered, does not open', () => {
    const seal = keyEncryption(config);
    const sealed = seal.seal(kid, jwk);
    expect(configErrorOf(() => seal.open('another-kid', sealed)).message).toMatch(/does not decrypt/);
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[3]!, 'base64url');
    flipped[0]! ^= 1;
    expect(configErrorOf(() => seal.open(kid, [...parts.slice(0, 3), flipped.toString('base64url'), parts[4]].join('.'))).message).toMatch(/does not decrypt/);
    expect(configErrorOf(() => seal.open(kid, [...parts.slice(0, 4), parts[4]!.slice(0, 8)].join('.'))).message).toMatch(/does not decrypt/); // a short tag
    expect(configErrorOf(() => seal.open(kid, `v2.${parts.slice(1).join('.')}`)).message).toMatch(/not in a sealed form/);
  });
});

describe('KEYS_ENCRYPTION_KEY unset (development)', () => {
  test('the service generates a key into DATA_DIR once (mode 0600) and keeps using it', () => {
    const config = configFor();
    const first = keyEncryption(config, { generate: true });
    const file = path.join(config.dataDir, 'keys-encryption-key');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, 'utf8')).toMatch(/^[\w-]{43}\n$/);
    const sealed = first.seal(kid, jwk);
    expect(keyEncryption(config, { generate: true }).open(kid, sealed)).toEqual(jwk);
    expect(keyEncryption(config).id).toBe(first.id); // the CLI reads the same file
  });

  test('the CLI never generates one: without the file it is a ConfigError naming KEYS_ENCRYPTION_KEY', () => {
    const config = configFor();
    const error = configErrorOf(() => keyEncryption(config));
    expect(error.variable).toBe('KEYS_ENCRYPTION_KEY');
    expect(error.message).toMatch(/is not set, and .*keys-encryption-key cannot be read \(ENOENT\)/);
    expect(fs.existsSync(path.join(config.dataDir, 'keys-encryption-key'))).toBe(false);
  });

  test('a damaged key file is a ConfigError naming KEYS_ENCRYPTION_KEY', () => {
    const config = configFor();
    fs.writeFileSync(path.join(config.dataDir, 'keys-encryption-key'), 'not a key\n');
    expect(configErrorOf(() => keyEncryption(config, { generate: true })).variable).toBe('KEYS_ENCRYPTION_KEY');
  });
});
