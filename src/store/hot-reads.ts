/**
 * Every read on the request path, memoised for the request (store/request-memo.ts), so the
 * provider's repeated lookups of one request cost one round trip (README "Storage"):
 *
 * | lookup                 | also read in the same statement                                           |
 * |------------------------|---------------------------------------------------------------------------|
 * | a token or a code      | its grant, its user, its client, whether that client has webhook endpoints |
 * | a client, on a token request | the code or refresh token the form names, with all of the above      |
 * | a client, otherwise    | what the login session points at: its user and its grant for that client   |
 * | a user by id           | —                                                                         |
 *
 * A token request asks for the client (authentication), then the code, grant and user; a
 * silent authorization for the client, then the account, then the grant. Whether the client has
 * enabled webhook endpoints comes along, so raising an event for a client without any costs
 * nothing.
 */
import type { Client, User } from '../generated/prisma/client.js';
import type { AdapterPayload } from 'oidc-provider';
import { currentMemo, memoised, remember, takeLookAhead } from './request-memo.js';
import type { HotSql } from './sql.js';
import { turnBatch } from './turn-batch.js';

/** A model row as the hot statements return it (times as epoch numbers, so no time-zone parsing). */
export interface HotRow {
  payload: AdapterPayload;
  expires_ms: number | null;
  consumed_s: number | null;
}

/**
 * Whether `value` can name something we stored: every id, uid and client_id we write is printable
 * ASCII (base64url tokens, our client ids). Anything else (NUL, which Postgres text cannot hold,
 * or a lone surrogate, which jsonb refuses) is answered "absent" without asking the store, so it
 * can never fail the statement it would share with other requests' lookups.
 */
export const storable = (value: string) => /^[\x20-\x7e]{1,1024}$/.test(value);

const COLUMNS = (alias: string) => `${alias}.payload, (extract(epoch from ${alias}.expires_at) * 1000)::float8 AS expires_ms, extract(epoch from ${alias}.consumed_at)::float8 AS consumed_s`;

/** Models whose lookup also brings the grant, user and client the provider asks for next. */
const WITH_RELATIONS = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken']);

/**
 * The keys of one turn's lookups (store/turn-batch.ts), as rows: `n` is a lookup's place in the
 * turn. JSON, not arrays or delimiters: any string a caller sends arrives as it was sent.
 */
const KEYS = (columns: string) => `jsonb_to_recordset($1::jsonb) AS k(n int, ${columns})`;

const FIND = `SELECT k.n, ${COLUMNS('m')} FROM ${KEYS('type text, id text')} JOIN oidc_models m ON m.type = k.type AND m.id = k.id`;

const UUID_SQL = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

const FIND_WITH_RELATIONS = `
SELECT k.n, ${COLUMNS('m')},
  g.payload AS g_payload, (extract(epoch from g.expires_at) * 1000)::float8 AS g_expires_ms, extract(epoch from g.consumed_at)::float8 AS g_consumed_s,
  to_jsonb(u) AS "user", to_jsonb(c) AS client,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.client_id = c.client_id AND e.enabled) AS client_has_webhooks
FROM ${KEYS('type text, id text')}
JOIN oidc_models m ON m.type = k.type AND m.id = k.id
LEFT JOIN oidc_models g ON g.type = 'Grant' AND g.id = m.grant_id
LEFT JOIN LATERAL (SELECT * FROM users WHERE users.id = CASE WHEN m.payload->>'accountId' ~ '${UUID_SQL}' THEN (m.payload->>'accountId')::uuid END) u ON true
LEFT JOIN clients c ON c.client_id = m.payload->>'clientId'`;

interface RelatedRow extends HotRow {
  g_payload: AdapterPayload | null;
  g_expires_ms: number | null;
  g_consumed_s: number | null;
  user: Json | null;
  client: Json | null;
  client_has_webhooks: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Json = Record<string, unknown>;

/**
 * A row read as JSON (`to_jsonb`) in the shape Prisma gives it: snake_case columns to the
 * model's camelCase fields (the schema maps them so), `…_at` timestamps to Dates. Generic, so a
 * column added to `users` or `clients` arrives as Prisma would hand it over.
 */
const FIELDS = new Map<string, string>();
const field = (column: string) => {
  let name = FIELDS.get(column);
  if (name === undefined) FIELDS.set(column, name = column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()));
  return name;
};

function asModel<T>(row: Json): T {
  const model: Json = {};
  for (const column in row) {
    const value = row[column];
    model[field(column)] = typeof value === 'string' && column.endsWith('_at') ? new Date(value) : value;
  }
  return model as T;
}

const asUser = (row: Json) => asModel<User>(row);
const asClient = (row: Json) => asModel<Client>(row);

function rememberUser(id: string, row: Json | null): void {
  remember(`user:${id}`, row ? asUser(row) : null);
}

function rememberClient(clientId: string, row: Json | null, hasWebhooks: boolean): void {
  remember(`client:${clientId}`, row ? asClient(row) : null);
  remember(`webhooks:${clientId}`, row ? hasWebhooks : false);
}

function rememberGrant(grantId: string, row: { g_payload: AdapterPayload | null; g_expires_ms: number | null; g_consumed_s: number | null }): void {
  remember(`oidc:Grant:${grantId}`, row.g_payload ? { payload: row.g_payload, expires_ms: row.g_expires_ms, consumed_s: row.g_consumed_s } : null);
}

/** Remembers the login session the request carries (Session model), for {@link findClient}. */
export function rememberSession(payload: AdapterPayload | undefined): void {
  if (payload) remember('session', payload);
}

/** Whether the client has an enabled webhook endpoint, if this request has read it already (else undefined). */
export function clientHasWebhooks(clientId: string): boolean | undefined {
  return currentMemo()?.rows.get(`webhooks:${clientId}`) as boolean | undefined;
}

const CLIENT = `
SELECT k.n, to_jsonb(c) AS client,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.client_id = k.client_id AND e.enabled) AS has_webhooks,
  (SELECT to_jsonb(u) FROM users u WHERE u.id = k.account_id) AS "user",
  g.payload AS g_payload, (extract(epoch from g.expires_at) * 1000)::float8 AS g_expires_ms, extract(epoch from g.consumed_at)::float8 AS g_consumed_s
FROM ${KEYS('client_id text, account_id uuid, grant_id text')}
LEFT JOIN clients c ON c.client_id = k.client_id
LEFT JOIN oidc_models g ON g.type = 'Grant' AND g.id = k.grant_id`;

const USERS = `SELECT k.n, to_jsonb(u) AS "user" FROM ${KEYS('id uuid')} JOIN users u ON u.id = k.id`;

interface ClientRow {
  client: Json | null;
  has_webhooks: boolean;
  user: Json | null;
  g_payload: AdapterPayload | null;
  g_expires_ms: number | null;
  g_consumed_s: number | null;
}

/**
 * One statement a turn for every lookup of `text` made in that turn; each lookup gets its row
 * (or null). The rows are remembered by the caller, in its own request's memo.
 */
function byTurn<K extends object, Row>(sql: HotSql, text: string) {
  return turnBatch<K, Row | null>(async (keys) => {
    const rows = await sql<Row & { n: number }>(text, [JSON.stringify(keys.map((key, n) => ({ n, ...key })))]);
    const found = new Map(rows.map((row) => [row.n, row]));
    return keys.map((_, n) => [null, found.get(n) ?? null]);
  });
}

/** The request path's reads (see above), each memoised for the request and batched by turn. */
export function createHotReads(sql: HotSql) {
  const plain = byTurn<{ type: string; id: string }, HotRow>(sql, FIND);
  const related = byTurn<{ type: string; id: string }, RelatedRow>(sql, FIND_WITH_RELATIONS);
  const clients = byTurn<{ client_id: string; account_id: string | null; grant_id: string | null }, ClientRow>(sql, CLIENT);
  const users = byTurn<{ id: string }, { user: Json }>(sql, USERS);

  /** A model instance by id; a token or code brings its grant, user and client into the memo. */
  async function readModel(type: string, id: string): Promise<HotRow | null> {
    if (!WITH_RELATIONS.has(type)) return plain({ type, id });
    const row = await related({ type, id });
    if (!row) return null;
    if (row.payload.grantId) rememberGrant(row.payload.grantId, row);
    if (typeof row.payload.accountId === 'string') rememberUser(row.payload.accountId, row.user);
    if (typeof row.payload.clientId === 'string') rememberClient(row.payload.clientId, row.client, row.client_has_webhooks);
    return row;
  }

  function findModel(type: string, id: string): Promise<HotRow | null> {
    if (!storable(id)) return Promise.resolve(null);
    return memoised(`oidc:${type}:${id}`, () => readModel(type, id));
  }

  return {
    findModel,
    findClient(clientId: string): Promise<Client | null> {
      return memoised(`client:${clientId}`, async () => {
        // A token request: its code or refresh token names this client (when it is not a forgery),
        // so reading the token with its relations brings the client too.
        const ahead = takeLookAhead();
        if (ahead) {
          await findModel(ahead.type, ahead.id);
          const rows = currentMemo()!.rows;
          if (rows.has(`client:${clientId}`)) return rows.get(`client:${clientId}`) as Client | null;
        }
        const session = currentMemo()?.rows.get('session') as { accountId?: unknown; authorizations?: Record<string, { grantId?: unknown }> } | undefined;
        const accountId = typeof session?.accountId === 'string' && UUID.test(session.accountId) ? session.accountId : null;
        const grantId = session?.authorizations?.[clientId]?.grantId;
        if (!storable(clientId)) return null;
        const row = (await clients({ client_id: clientId, account_id: accountId, grant_id: typeof grantId === 'string' && storable(grantId) ? grantId : null }))!;
        remember(`webhooks:${clientId}`, row.client ? row.has_webhooks : false);
        if (accountId) rememberUser(accountId, row.user);
        if (typeof grantId === 'string') rememberGrant(grantId, row);
        return row.client ? asClient(row.client) : null;
      });
    },
    /** A user by id (null for an id that is not a UUID), memoised for the request. */
    findUser(id: string): Promise<User | null> {
      if (!UUID.test(id)) return Promise.resolve(null);
      return memoised(`user:${id}`, async () => {
        const row = await users({ id });
        return row ? asUser(row.user) : null;
      });
    },
  };
}
