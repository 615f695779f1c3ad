/**
 * The adapter contract on Postgres: one row per model instance in `oidc_models`, keyed by
 * (type, id). Expired rows read as absent.
 *
 * The request path (find, consume, upsert) goes to the driver under Prisma's adapter in as few
 * round trips as the provider allows (README "Storage"), within one request's memo
 * (store/request-memo.ts):
 * - finding a token or a code also reads its grant, its user and its client in the same
 *   statement, so the provider's next three lookups cost nothing;
 * - `consume` and an access token's `upsert` are deferred and sent with the next write (the
 *   refresh token the provider saves next, or before the response leaves), in one statement in
 *   which the consume is a condition of the writes: a code (or refresh token) already consumed
 *   by a parallel request writes nothing and fails that write with the provider's error.
 * Any other call sends what is deferred first, so the store always sees the calls in order.
 * Without a request (jobs, the contract suite) every call is sent at once.
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import type { HotSql } from '../store/sql.js';
import { currentMemo, flushPending, forget, memoised, remember } from '../store/request-memo.js';
import { rememberUser, rememberClient } from '../store/hot-reads.js';
import type { Adapter, AdapterFor, AdapterPayload } from './adapter.js';
import { alreadyConsumed, withConsumed } from './adapter.js';

/** A row as the hot statements return it (times as epoch numbers, so no time-zone parsing). */
interface HotRow {
  payload: AdapterPayload;
  expires_ms: number | null;
  consumed_s: number | null;
}

function live(row: HotRow | null | undefined): AdapterPayload | undefined {
  if (!row || (row.expires_ms !== null && row.expires_ms <= Date.now())) return undefined;
  return withConsumed(row.payload, row.consumed_s === null ? undefined : Math.floor(row.consumed_s));
}

/** Postgres text cannot hold NUL; such a value names nothing we stored. */
const storable = (value: string) => value.length <= 1024 && !value.includes('\0');

const COLUMNS = (alias: string) => `${alias}.payload, (extract(epoch from ${alias}.expires_at) * 1000)::float8 AS expires_ms, extract(epoch from ${alias}.consumed_at)::float8 AS consumed_s`;

/** Models whose lookup also brings the grant, user and client the provider asks for next. */
const WITH_RELATIONS = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken']);

const FIND = `SELECT ${COLUMNS('m')} FROM oidc_models m WHERE m.type = $1 AND m.id = $2`;

const UUID = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

const FIND_WITH_RELATIONS = `
SELECT ${COLUMNS('m')},
  g.payload AS g_payload, (extract(epoch from g.expires_at) * 1000)::float8 AS g_expires_ms, extract(epoch from g.consumed_at)::float8 AS g_consumed_s,
  to_jsonb(u) AS "user", to_jsonb(c) AS client,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.client_id = c.client_id AND e.enabled) AS client_has_webhooks
FROM oidc_models m
LEFT JOIN oidc_models g ON g.type = 'Grant' AND g.id = m.grant_id
LEFT JOIN LATERAL (SELECT * FROM users WHERE users.id = CASE WHEN m.payload->>'accountId' ~ '${UUID}' THEN (m.payload->>'accountId')::uuid END) u ON true
LEFT JOIN clients c ON c.client_id = m.payload->>'clientId'
WHERE m.type = $1 AND m.id = $2`;

type Op =
  | { kind: 'consume'; type: string; id: string }
  | { kind: 'upsert'; type: string; id: string; payload: AdapterPayload; expiresIn: number | undefined };

/**
 * One statement for a list of writes: every consume is a conditional update, and the upserts
 * happen only if every consume did (data-modifying CTEs run in one snapshot, all or nothing).
 */
function batchStatement(ops: Op[], now: Date): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const p = (value: unknown) => { params.push(value); return `$${params.length}`; };
  const at = () => (params.length === 0 ? p(now.toISOString()) : '$1'); // $1 once a consume needs it
  const consumes = ops.filter((op) => op.kind === 'consume');
  const upserts = new Map<string, Extract<Op, { kind: 'upsert' }>>();
  for (const op of ops) if (op.kind === 'upsert') upserts.set(`${op.type}\0${op.id}`, op); // the last write of an instance wins
  const ctes = consumes.map((op, i) => `c${i} AS (UPDATE oidc_models SET consumed_at = ${at()}::timestamptz WHERE type = ${p(op.type)} AND id = ${p(op.id)} AND consumed_at IS NULL AND (expires_at IS NULL OR expires_at > $1::timestamptz) RETURNING 1)`);
  const ok = consumes.length ? consumes.map((_, i) => `EXISTS (SELECT 1 FROM c${i})`).join(' AND ') : 'true';
  if (upserts.size) {
    const rows = [...upserts.values()].map((op) => `(${p(op.type)}::text, ${p(op.id)}::text, ${p(JSON.stringify(op.payload))}::jsonb, ${p(op.payload.grantId ?? null)}::text, ${p(op.payload.uid ?? null)}::text, ${p(op.payload.userCode ?? null)}::text, ${p(op.expiresIn ? new Date(now.getTime() + op.expiresIn * 1000).toISOString() : null)}::timestamptz)`);
    ctes.push(`w AS (INSERT INTO oidc_models (type, id, payload, grant_id, uid, user_code, expires_at)
      SELECT * FROM (VALUES ${rows.join(', ')}) v WHERE ${ok}
      ON CONFLICT (type, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid, user_code = excluded.user_code, expires_at = excluded.expires_at
      RETURNING 1)`);
  }
  return { text: `WITH ${ctes.join(', ')} SELECT ${ok} AS ok${upserts.size ? ', (SELECT count(*) FROM w) AS written' : ''}`, params };
}

async function send(sql: HotSql, ops: Op[]): Promise<void> {
  const { text, params } = batchStatement(ops, new Date());
  const [result] = await sql<{ ok: boolean }>(text, params);
  if (!result?.ok) throw alreadyConsumed(ops.find((op) => op.kind === 'consume')!.type);
}

/** Queues `op` in the request's memo (sent by the next write or before the response), or sends it now. */
async function write(sql: HotSql, op: Op, deferrable: boolean): Promise<void> {
  forget(`oidc:${op.type}:${op.id}`);
  const memo = currentMemo();
  if (!memo) return send(sql, [op]);
  const queued = (memo.pending?.ops ?? []) as Op[];
  queued.push(op);
  if (deferrable) {
    memo.pending ??= { ops: queued, send: () => send(sql, queued) };
    return;
  }
  memo.pending = undefined;
  await send(sql, queued);
}

export function postgresAdapters(db: { prisma: PrismaClient; sql: HotSql }): AdapterFor {
  const { prisma, sql } = db;
  return (type): Adapter => {
    async function readOne(id: string): Promise<HotRow | null> {
      if (!WITH_RELATIONS.has(type)) return (await sql<HotRow>(FIND, [type, id]))[0] ?? null;
      const [row] = await sql<HotRow & { g_payload: AdapterPayload | null; g_expires_ms: number | null; g_consumed_s: number | null; user: Record<string, unknown> | null; client: Record<string, unknown> | null; client_has_webhooks: boolean }>(FIND_WITH_RELATIONS, [type, id]);
      if (!row) return null;
      if (row.payload.grantId) remember(`oidc:Grant:${row.payload.grantId}`, row.g_payload ? { payload: row.g_payload, expires_ms: row.g_expires_ms, consumed_s: row.g_consumed_s } : null);
      if (typeof row.payload.accountId === 'string') rememberUser(row.payload.accountId, row.user);
      if (typeof row.payload.clientId === 'string') rememberClient(row.payload.clientId, row.client, row.client_has_webhooks);
      return row;
    }

    return {
      async upsert(id, payload, expiresIn) {
        // An access token waits for the refresh token saved right after it (one round trip).
        await write(sql, { kind: 'upsert', type, id, payload, expiresIn }, type === 'AccessToken');
      },
      async find(id) {
        if (!storable(id)) return undefined;
        await flushPending();
        return live(await memoised(`oidc:${type}:${id}`, () => readOne(id)));
      },
      async findByUid(uid) {
        if (!storable(uid)) return undefined;
        await flushPending();
        const row = await prisma.oidcModel.findFirst({ where: { type, uid } });
        return row ? live({ payload: row.payload as AdapterPayload, expires_ms: row.expiresAt?.getTime() ?? null, consumed_s: row.consumedAt ? row.consumedAt.getTime() / 1000 : null }) : undefined;
      },
      async findByUserCode(userCode) {
        if (!storable(userCode)) return undefined;
        await flushPending();
        const row = await prisma.oidcModel.findFirst({ where: { type, userCode } });
        return row ? live({ payload: row.payload as AdapterPayload, expires_ms: row.expiresAt?.getTime() ?? null, consumed_s: row.consumedAt ? row.consumedAt.getTime() / 1000 : null }) : undefined;
      },
      async consume(id) {
        // Sent with the writes that follow it: they happen only if it does.
        await write(sql, { kind: 'consume', type, id }, true);
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
    };
  };
}
