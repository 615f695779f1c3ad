/**
 * The adapter contract in process memory, for the embedded default without Redis. Entries
 * expire lazily on read and in a periodic sweep; nothing survives a restart.
 */
import type { Adapter, AdapterFor, AdapterPayload } from './adapter.js';
import { alreadyConsumed, CLAIMED, CLAIMED_ON_FIND, REPLAY_CLAIM_SECONDS, withConsumed } from './adapter.js';

interface Entry {
  model: string;
  payload: AdapterPayload;
  expiresAt: number | undefined;
  consumedAt: number | undefined;
}

export interface MemoryAdapters {
  readonly adapters: AdapterFor;
  /** Stops the sweep timer. */
  close(): void;
}

export function memoryAdapters(sweepEveryMs = 60_000): MemoryAdapters {
  const entries = new Map<string, Entry>();
  const isLive = (entry: Entry | undefined): entry is Entry =>
    entry !== undefined && (entry.expiresAt === undefined || entry.expiresAt > Date.now());
  const sweep = setInterval(() => {
    for (const [key, entry] of entries) if (!isLive(entry)) entries.delete(key);
  }, sweepEveryMs);
  sweep.unref();

  const adapters: AdapterFor = (model): Adapter => {
    const key = (id: string) => `${model}:${id}`;
    const read = (entry: Entry | undefined) => (isLive(entry)
      ? withConsumed(entry.payload, entry.consumedAt) : undefined);
    const findBy = (field: 'uid' | 'userCode', value: string) => {
      for (const entry of entries.values()) {
        if (entry.model === model && entry.payload[field] === value && isLive(entry)) return read(entry);
      }
      return undefined;
    };
    return {
      async upsert(id, payload, expiresIn) {
        entries.set(key(id), {
          model,
          payload: structuredClone(payload),
          expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : undefined,
          consumedAt: undefined,
        });
      },
      async find(id) {
        const found = read(entries.get(key(id)));
        // adapter.ts CLAIMED_ON_FIND: a miss claims the id, with no await between the look and the claim.
        if (!found && model === CLAIMED_ON_FIND) entries.set(key(id), { model, payload: CLAIMED, expiresAt: Date.now() + REPLAY_CLAIM_SECONDS * 1000, consumedAt: undefined });
        return found;
      },
      async findByUid(uid) {
        return findBy('uid', uid);
      },
      async findByUserCode(userCode) {
        return findBy('userCode', userCode);
      },
      async consume(id) {
        const entry = entries.get(key(id));
        if (!isLive(entry) || entry.consumedAt !== undefined) throw alreadyConsumed(model);
        entry.consumedAt = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        entries.delete(key(id));
      },
      async revokeByGrantId(grantId) {
        for (const [entryKey, entry] of entries) {
          if (entry.model === model && entry.payload.grantId === grantId) entries.delete(entryKey);
        }
      },
    };
  };
  return { adapters, close: () => clearInterval(sweep) };
}
