/**
 * The `signing_keys` table: every instance reads it, the first start seeds it, `keys:rotate`
 * schedules a rotation in it, and the instances erase what has retired. The times are the
 * database's (`now()`), so where instances' clocks differ the schedule does not. Changes that
 * race take one transaction-scoped advisory lock; the table's unique index is the last word
 * (at most one key without a successor).
 *
 * A rotation and an erasure are made in the caller's transaction (`tx`), where the caller
 * records them (audit/records.ts `records.change`), so that the audit row and the change commit
 * together; the seed, recorded nowhere, opens its own.
 *
 * @example const store = signingKeyStore(prisma); const [keys, now] = [await store.read(), await store.now()];
 *          const { next, replaced } = await records.change(async (tx, record) => { const rotation = await store.rotate(tx, key, times); await record.audit('key.rotated', …); return rotation; });
 */
import type { JsonWebKey } from 'node:crypto';
import type { Prisma, PrismaClient, SigningKey } from '../generated/prisma/client.js';

export interface StoredKey {
  readonly kid: string;
  readonly alg: string;
  readonly publicJwk: JsonWebKey;
  /** The private JWK, sealed (keys/key-encryption.ts); null once retired and erased. */
  readonly sealed: string | null;
  readonly createdAt: Date;
  readonly currentAt: Date;
  readonly retiringAt: Date | null;
  readonly retiredAt: Date | null;
}

export type NewKey = Pick<StoredKey, 'kid' | 'alg' | 'publicJwk' | 'currentAt' | 'retiringAt' | 'retiredAt'> & { sealed: string };

/** A rotation that cannot be made now (nothing to replace, one already under way). */
export class KeyRotationError extends Error {
  override name = 'KeyRotationError';
}

export interface Rotation {
  readonly next: StoredKey;
  readonly replaced: StoredKey;
}

/** A key whose private part was erased: past its `retiredAt`, it will never sign or be published again. */
export interface ErasedKey {
  readonly kid: string;
  readonly alg: string;
  readonly retiredAt: Date;
}

const stored = (row: SigningKey): StoredKey => ({
  kid: row.kid, alg: row.alg, publicJwk: row.publicJwk as JsonWebKey, sealed: row.privateJwk,
  createdAt: row.createdAt, currentAt: row.currentAt, retiringAt: row.retiringAt, retiredAt: row.retiredAt,
});

const row = (key: NewKey) => ({
  kid: key.kid, alg: key.alg, publicJwk: key.publicJwk as Prisma.InputJsonObject, privateJwk: key.sealed,
  currentAt: key.currentAt, retiringAt: key.retiringAt, retiredAt: key.retiredAt,
});

/** Serialises the changes to the table (seeding, rotating) for the transaction's length. */
const lock = (tx: Prisma.TransactionClient) => tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtext('signing_keys'))`;

const databaseNow = async (tx: Pick<PrismaClient, '$queryRaw'>) => (await tx.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`)[0]!.now;

export function signingKeyStore(prisma: PrismaClient) {
  return {
    /** The keys: all, or only those still holding a private part. */
    async read({ withRetired = false } = {}): Promise<StoredKey[]> {
      const rows = await prisma.signingKey.findMany({ where: withRetired ? {} : { privateJwk: { not: null } }, orderBy: { currentAt: 'desc' } });
      return rows.map(stored);
    },

    /** The database's time. */
    now: () => databaseNow(prisma),

    /** Stores `keys` if the table is empty (the first start); false when another start did first. */
    async seed(keys: (now: Date) => NewKey[]): Promise<boolean> {
      return prisma.$transaction(async (tx) => {
        await lock(tx);
        if (await tx.signingKey.count() > 0) return false;
        await tx.signingKey.createMany({ data: keys(await databaseNow(tx)).map(row) });
        return true;
      });
    },

    /**
     * In `tx`, adds `next`, current from `publishAheadMs` after now, and schedules the key it
     * replaces: retiring then, retired `retireAfterMs` later. Refused when no key exists yet, or
     * when a rotation is under way.
     */
    async rotate(tx: Prisma.TransactionClient, next: Pick<NewKey, 'kid' | 'alg' | 'publicJwk' | 'sealed'>,
      times: { publishAheadMs: number; retireAfterMs: number }): Promise<Rotation> {
      await lock(tx);
      const now = await databaseNow(tx);
      const open = await tx.signingKey.findFirst({ where: { retiringAt: null } });
      if (!open) throw new KeyRotationError('there is no signing key to replace yet: start the service once, it stores the first one');
      if (open.currentAt > now) {
        throw new KeyRotationError(`a rotation is under way: key ${open.kid} becomes current at ${open.currentAt.toISOString()}; rotate again after that`);
      }
      const currentAt = new Date(now.getTime() + times.publishAheadMs);
      const retiredAt = new Date(currentAt.getTime() + times.retireAfterMs);
      const replaced = await tx.signingKey.update({ where: { kid: open.kid }, data: { retiringAt: currentAt, retiredAt } });
      const created = await tx.signingKey.create({ data: row({ ...next, currentAt, retiringAt: null, retiredAt: null }) });
      return { next: stored(created), replaced: stored(replaced) };
    },

    /**
     * In `tx`, erases the private part of every key past its `retired_at`. Safe with several
     * instances: a key is erased, and so recorded, by exactly one of them.
     */
    async eraseRetired(tx: Prisma.TransactionClient): Promise<ErasedKey[]> {
      const erased = await tx.$queryRaw<{ kid: string; alg: string; retired_at: Date }[]>`
        UPDATE signing_keys SET private_jwk = NULL
        WHERE retired_at <= clock_timestamp() AND private_jwk IS NOT NULL
        RETURNING kid, alg, retired_at`;
      return erased.map((key) => ({ kid: key.kid, alg: key.alg, retiredAt: key.retired_at }));
    },
  };
}

/** A rotation's audit detail (`key.rotated`). */
export const rotationDetail = ({ next, replaced }: Rotation) => ({
  kid: next.kid, alg: next.alg, current_at: next.currentAt.toISOString(), replaces: replaced.kid, replaced_retired_at: replaced.retiredAt!.toISOString(),
});

/** An erased key's audit detail (`key.retired`). */
export const retirementDetail = (key: ErasedKey) => ({ kid: key.kid, alg: key.alg, retired_at: key.retiredAt.toISOString() });

export type SigningKeyStore = ReturnType<typeof signingKeyStore>;
