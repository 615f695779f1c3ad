/**
 * Reads of users and clients on the request path, memoised for the request
 * (store/request-memo.ts), so the provider's repeated lookups of one request cost one round trip.
 *
 * Looking a client up also reads, in the same statement, what the request's login session
 * points at: its user and its grant for that client (a silent authorization asks for the
 * client, then the account, then the grant). Whether the client has enabled webhook endpoints
 * comes along too, so raising an event for a client without any costs nothing.
 */
import type { Client, User } from '../generated/prisma/client.js';
import type { AdapterPayload } from 'oidc-provider';
import { currentMemo, memoised, remember } from './request-memo.js';
import type { HotSql } from './sql.js';

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

/** Remembers a user row read (as JSON) by another statement of this request. */
export function rememberUser(id: string, row: Json | null): void {
  remember(`user:${id}`, row ? asUser(row) : null);
}

/** Remembers a client row read (as JSON) by another statement of this request. */
export function rememberClient(clientId: string, row: Json | null, hasWebhooks: boolean): void {
  remember(`client:${clientId}`, row ? asClient(row) : null);
  remember(`webhooks:${clientId}`, row ? hasWebhooks : false);
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

/** A client by id, memoised for the request; also brings the session's user and grant (see above). */
export function createHotReads(sql: HotSql) {
  return {
    findClient(clientId: string): Promise<Client | null> {
      return memoised(`client:${clientId}`, async () => {
        const session = currentMemo()?.rows.get('session') as { accountId?: unknown; authorizations?: Record<string, { grantId?: unknown }> } | undefined;
        const accountId = typeof session?.accountId === 'string' && UUID.test(session.accountId) ? session.accountId : null;
        const grantId = session?.authorizations?.[clientId]?.grantId;
        const [row] = await sql<ClientRow>(CLIENT, [clientId, accountId, typeof grantId === 'string' ? grantId : null]);
        remember(`webhooks:${clientId}`, row!.client ? row!.has_webhooks : false);
        if (accountId) rememberUser(accountId, row!.user);
        if (typeof grantId === 'string') remember(`oidc:Grant:${grantId}`, row!.g_payload ? { payload: row!.g_payload, expires_ms: row!.g_expires_ms, consumed_s: row!.g_consumed_s } : null);
        return row!.client ? asClient(row!.client) : null;
      });
    },
    /** A user by id, memoised for the request (`read` is the store's own lookup). */
    findUser(id: string, read: (id: string) => Promise<User | null>): Promise<User | null> {
      return memoised(`user:${id}`, () => read(id));
    },
  };
}
