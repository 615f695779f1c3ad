/**
 * The seal on the signing keys' private parts: AES-256-GCM under KEYS_ENCRYPTION_KEY, or, outside
 * production when it is unset, under a key generated once into DATA_DIR/keys-encryption-key.
 * A sealed key reads `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts): a fresh 96-bit IV
 * each time, the row's kid as additional data (a sealed key copied onto another row does not
 * open), and the id of the encryption key (a hash, not the key) so that a wrong key is named as
 * such rather than reported as damage.
 *
 * @see NIST SP 800-38D (GCM; random 96-bit IVs) · docs/signing-keys.md
 * @example const seal = keyEncryption(config); const text = seal.seal(kid, jwk); seal.open(kid, text);
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, encryptionKeyOf } from '../config.js';
import type { Config } from '../config.js';

const VERSION = 'v1';

export interface KeyEncryption {
  /** Identifies the encryption key without revealing it (16 hex digits). */
  readonly id: string;
  seal(kid: string, jwk: JsonWebKey): string;
  /** Throws a ConfigError naming KEYS_ENCRYPTION_KEY when `sealed` was made with another key or does not open. */
  open(kid: string, sealed: string): JsonWebKey;
}

const generatedFile = (dataDir: string) => path.join(dataDir, 'keys-encryption-key');

/**
 * KEYS_ENCRYPTION_KEY, else the key generated into DATA_DIR (by the service's first start:
 * `generate`; the CLI only reads it, so that it never seals with a key the service lacks).
 */
function encryptionKey(config: Config, generate: boolean): { key: Buffer; source: string } {
  if (config.signingKeys.encryptionKey) return { key: config.signingKeys.encryptionKey, source: 'KEYS_ENCRYPTION_KEY' };
  const file = generatedFile(config.dataDir);
  if (generate && !fs.existsSync(file)) {
    fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    try {
      fs.writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Another instance sharing DATA_DIR won the race: use its key.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError('KEYS_ENCRYPTION_KEY', `is not set, and ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): set it to the service's key`);
  }
  return { key: encryptionKeyOf(text, 'KEYS_ENCRYPTION_KEY'), source: file };
}

export function keyEncryption(config: Config, { generate = false }: { generate?: boolean } = {}): KeyEncryption {
  const { key, source } = encryptionKey(config, generate);
  const id = createHmac('sha256', key).update('signing-keys key id').digest('hex').slice(0, 16);
  const b64 = (bytes: Buffer) => bytes.toString('base64url');
  const refuse = (kid: string, problem: string) => new ConfigError('KEYS_ENCRYPTION_KEY', `signing key ${kid} ${problem} (the key in use comes from ${source}, id ${id})`);
  return {
    id,
    seal(kid, jwk) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(kid));
      const sealed = Buffer.concat([cipher.update(JSON.stringify(jwk), 'utf8'), cipher.final()]);
      return [VERSION, id, b64(iv), b64(sealed), b64(cipher.getAuthTag())].join('.');
    },
    open(kid, text) {
      const [version, keyId, iv, sealed, tag, ...rest] = text.split('.');
      if (version !== VERSION || rest.length || !tag) throw refuse(kid, 'is not in a sealed form this version reads');
      if (keyId !== id) throw refuse(kid, `was sealed with another encryption key (id ${keyId}): every instance and the CLI need the same KEYS_ENCRYPTION_KEY`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv!, 'base64url'), { authTagLength: 16 }).setAAD(Buffer.from(kid)).setAuthTag(Buffer.from(tag, 'base64url'));
        return JSON.parse(Buffer.concat([decipher.update(Buffer.from(sealed!, 'base64url')), decipher.final()]).toString('utf8')) as JsonWebKey;
      } catch {
        throw refuse(kid, 'does not decrypt: its sealed private part is damaged or belongs to another row');
      }
    },
  };
}
