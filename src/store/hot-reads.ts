/**
 * Every read on the request path, memoised for the request (store/request-memo.ts), so the
 * provider's repeated lookups of one request cost one round trip (README "Storage"):
 *
 * | lookup                 | also read in the same statement                                           |
 * |------------------------|---------------------------------------------------------------------------|
 * | a token or a code      | its grant, its user, its client, whether that client has webhook endpoints |
 * | a client, on a token request | the code or refresh token the form names, with all of the above      |
 * | a client, otherwise    | what the login session points at: its user and its grant for that client   |
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

/** A model row as the hot statements return it (times as epoch numbers, so no time-zone parsing). */
export interface HotRow {
  payload: AdapterPayload;
  expires_ms: number | null;
  consumed_s: number | null;
}

/** Postgres text cannot hold NUL; such a value names nothing we stored. */
export const storable = (value: string) => value.length <= 1024 && !value.includes('\0');

const COLUMNS = (alias: string) => `${alias}.payload, (extract(epoch from ${alias}.expires_at) * 1000)::float8 AS expires_ms, extract(epoch from ${alias}.consumed_at)::float8 AS consumed_s`;

/** Models whose lookup also brings the grant, user and client the provider asks for next. */
const WITH_RELATIONS = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken']);

const FIND = `SELECT ${COLUMNS('m')} FROM oidc_models m WHERE m.type = $1 AND m.id = $2`;

const UUID_SQL = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

const FIND_WITH_RELATIONS = `
SELECT ${COLUMNS('m')},
  g.payload AS g_payload, (extract(epoch from g.expires_at) * 1000)::float8 AS g_expires_ms, extract(epoch from g.consumed_at)::float8 AS g_consumed_s,
  to_jsonb(u) AS "user", to_jsonb(c) AS client,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.client_id = c.client_id AND e.enabled) AS client_has_webhooks
FROM oidc_models m
LEFT JOIN oidc_models g ON g.type = 'Grant' AND g.id = m.grant_id
LEFT JOIN LATERAL (SELECT * FROM users WHERE users.id = CASE WHEN m.payload->>'accountId' ~ '${UUID_SQL}' THEN (m.payload->>'accountId')::uuid END) u ON true
LEFT JOIN clients c ON c.client_id = m.payload->>'clientId'
WHERE m.type = $1 AND m.id = $2`;

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
SELECT to_jsonb(c) AS client,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.client_id = $1 AND e.enabled) AS has_webhooks,
  (SELECT to_jsonb(u) FROM users u WHERE u.id = $2::uuid) AS "user",
  g.payload AS g_payload, (extract(epoch from g.expires_at) * 1000)::float8 AS g_expires_ms, extract(epoch from g.consumed_at)::float8 AS g_consumed_s
FROM (SELECT 1) one
LEFT JOIN clients c ON c.client_id = $1
LEFT JOIN oidc_models g ON g.type = 'Grant' AND g.id = $3`;

interface ClientRow {
  client: Json | null;
  has_webhooks: boolean;
  user: Json | null;
  g_payload: AdapterPayload | null;
  g_expires_ms: number | null;
  g_consumed_s: number | null;
}

/** The request path's reads (see above), each memoised for the request. */
export function createHotReads(sql: HotSql) {
  /** A model instance by id; a token or code brings its grant, user and client into the memo. */
  async function readModel(type: string, id: string): Promise<HotRow | null> {
    if (!WITH_RELATIONS.has(type)) return (await sql<HotRow>(FIND, [type, id]))[0] ?? null;
    const [row] = await sql<RelatedRow>(FIND_WITH_RELATIONS, [type, id]);
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
        const [row] = await sql<ClientRow>(CLIENT, [clientId, accountId, typeof grantId === 'string' ? grantId : null]);
        remember(`webhooks:${clientId}`, row!.client ? row!.has_webhooks : false);
        if (accountId) rememberUser(accountId, row!.user);
        if (typeof grantId === 'string') rememberGrant(grantId, row!);
        return row!.client ? asClient(row!.client) : null;
      });
    },
    /** A user by id, memoised for the request (`read` is the store's own lookup). */
    findUser(id: string, read: (id: string) => Promise<User | null>): Promise<User | null> {
      return memoised(`user:${id}`, () => read(id));
    },
  };
}
