/**
 * The adapter contract on Postgres: one row per model instance in `oidc_models`, keyed by
 * (type, id). Expired rows read as absent.
 *
 * The request path goes to the driver under Prisma's adapter in as few round trips as the
 * provider allows (README "Storage"), within one request's memo (store/request-memo.ts):
 * - `find` reads through store/hot-reads.ts: a token or a code comes with its grant, its user
 *   and its client, so the provider's next lookups cost nothing;
 * - `consume` and `upsert` are deferred to the request's one write statement
 *   (store/write-batch.ts), sent before anything else is read and before the response leaves.
 *   A consume is a gate of that statement: a code (or refresh token) already consumed by a
 *   parallel request writes nothing and fails with the provider's error.
 * `destroy`, `revokeByGrantId` and the lookups by uid send what is deferred first, so the store
 * always sees the calls in order. Without a request (jobs, the contract suite) every call is
 * sent at once.
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import type { HotSql } from '../store/sql.js';
import { createHotReads, storable } from '../store/hot-reads.js';
import type { HotRow } from '../store/hot-reads.js';
import { defer, flushPending, forget } from '../store/request-memo.js';
import type { Gate, Merged, Write } from '../store/write-batch.js';
import type { Adapter, AdapterFor, AdapterPayload } from './adapter.js';
import { alreadyConsumed, withConsumed } from './adapter.js';

function live(row: HotRow | null | undefined): AdapterPayload | undefined {
  if (!row || (row.expires_ms !== null && row.expires_ms <= Date.now())) return undefined;
  return withConsumed(row.payload, row.consumed_s === null ? undefined : Math.floor(row.consumed_s));
}

/** Consumes, one CTE for a statement's batches: each taken only while its instance is unconsumed and unexpired. @see RFC 6749 §4.1.2 */
const CONSUMES: Omit<Merged, 'values'> = {
  key: 'consume',
  columns: ['type', 'id', 'at'],
  sql: (v) => `UPDATE oidc_models m SET consumed_at = v.at FROM ${v}
    WHERE m.type = v.type AND m.id = v.id AND m.consumed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > v.at) RETURNING v.gate, v.batch`,
};

/** A consume as a gate of a write batch. */
export function consumeGate(type: string, id: string): Gate {
  const at = new Date().toISOString();
  return {
    row: rowKey(type, id),
    merged: { ...CONSUMES, values: (p) => [[`${p(type)}::text`, `${p(id)}::text`, `${p(at)}::timestamptz`]] },
    refused: () => alreadyConsumed(type),
  };
}

/** A row of `oidc_models`, as write batches name the rows they update. */
const rowKey = (type: string, id: string) => `oidc_models:${type}\0${id}`;

/** The statement's one write to `oidc_models`: every upsert of the request, the last of an instance winning; one CTE with those of the statement's other requests. */
class ModelUpserts implements Write {
  static readonly KEY = 'oidc_models';
  readonly #rows = new Map<string, unknown[]>();
  readonly merged: Merged = {
    key: ModelUpserts.KEY,
    columns: ['type', 'id', 'payload', 'grant_id', 'uid', 'user_code', 'expires_at'],
    values: (p) => [...this.#rows.values()].map(([type, id, payload, grantId, uid, userCode, expiresAt]) => [
      `${p(type)}::text`, `${p(id)}::text`, `${p(payload)}::jsonb`, `${p(grantId)}::text`, `${p(uid)}::text`, `${p(userCode)}::text`, `${p(expiresAt)}::timestamptz`]),
    sql: (v, ok) => `INSERT INTO oidc_models (type, id, payload, grant_id, uid, user_code, expires_at)
      SELECT type, id, payload, grant_id, uid, user_code, expires_at FROM ${v} WHERE ${ok}
      ON CONFLICT (type, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid, user_code = excluded.user_code, expires_at = excluded.expires_at
      RETURNING 1`,
  };

  add(type: string, id: string, payload: AdapterPayload, expiresIn: number | undefined): void {
    const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000).toISOString() : null;
    this.#rows.set(rowKey(type, id), [type, id, JSON.stringify(payload), payload.grantId ?? null, payload.uid ?? null, payload.userCode ?? null, expiresAt]);
  }

  rows(): Iterable<string> {
    return this.#rows.keys();
  }

}

/** `hot`: the request path's reads (app.ts shares its own, so one turn's lookups go out together). */
export function postgresAdapters(db: { prisma: PrismaClient; sql: HotSql }, hot = createHotReads(db.sql)): AdapterFor {
  const { prisma, sql } = db;
  const fromPrisma = (row: { payload: unknown; expiresAt: Date | null; consumedAt: Date | null } | null) => (row
    ? live({ payload: row.payload as AdapterPayload, expires_ms: row.expiresAt?.getTime() ?? null, consumed_s: row.consumedAt ? row.consumedAt.getTime() / 1000 : null })
    : undefined);

  return (type): Adapter => ({
    async upsert(id, payload, expiresIn) {
      forget(`oidc:${type}:${id}`);
      await defer(sql, (batch) => {
        const upserts = (batch.get(ModelUpserts.KEY) as ModelUpserts | undefined) ?? new ModelUpserts();
        upserts.add(type, id, payload, expiresIn);
        batch.write(ModelUpserts.KEY, upserts);
      });
    },
    async find(id) {
      await flushPending();
      return live(await hot.findModel(type, id));
    },
    async findByUid(uid) {
      if (!storable(uid)) return undefined;
      await flushPending();
      return fromPrisma(await prisma.oidcModel.findFirst({ where: { type, uid } }));
    },
    async findByUserCode(userCode) {
      if (!storable(userCode)) return undefined;
      await flushPending();
      return fromPrisma(await prisma.oidcModel.findFirst({ where: { type, userCode } }));
    },
    async consume(id) {
      forget(`oidc:${type}:${id}`);
      await defer(sql, (batch) => batch.gate(consumeGate(type, id)));
    },
    async destroy(id) {
      await flushPending();
      forget(`oidc:${type}:${id}`);
      await prisma.oidcModel.deleteMany({ where: { type, id } });
    },
    async revokeByGrantId(grantId) {
      await flushPending();
      forget(`oidc:${type}:`);
      await prisma.oidcModel.deleteMany({ where: { type, grantId } });
    },
  });
}
