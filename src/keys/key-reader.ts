/**
 * The key table as an instance holds it: every key still holding its private part, each opened
 * once (a key that does not open fails the whole read, so the keys read before stay in use), and
 * the database's clock, by which the stored times are read (its offset to ours is measured at
 * each read, half a round trip at worst).
 *
 * @example const reader = keyReader(store, seal); const keys = await reader.read(); publishedAt(keys, reader.clock());
 */
import type { JsonWebKey } from 'node:crypto';
import type { KeyEncryption } from './key-encryption.js';
import type { SigningKeyStore, StoredKey } from './signing-keys.js';
import type { ScheduledKey } from './key-schedule.js';

export interface OpenKey extends ScheduledKey, Pick<StoredKey, 'alg' | 'publicJwk'> {
  readonly sealed: string;
  readonly privateJwk: JsonWebKey;
}

export function keyReader(store: SigningKeyStore, seal: KeyEncryption) {
  let opened = new Map<string, JsonWebKey>(); // by sealed text
  const reader = {
    /** The database's clock minus ours, in ms, as of the last read. */
    offset: 0,
    /** Now, on the database's clock. */
    clock: () => Date.now() + reader.offset,

    async read(): Promise<OpenKey[]> {
      const rows = await store.read();
      const before = Date.now();
      const now = await store.now();
      reader.offset = now.getTime() - (before + Date.now()) / 2;
      const keys = rows.map((row) => ({ ...row, sealed: row.sealed!, privateJwk: opened.get(row.sealed!) ?? seal.open(row.kid, row.sealed!) }));
      opened = new Map(keys.map((key) => [key.sealed, key.privateJwk]));
      return keys;
    },
  };
  return reader;
}
