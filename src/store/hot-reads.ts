/**
 * Every read on the request path (store/statements.ts), remembered for the request
 * (store/request-state.ts), so the provider's repeated lookups of one request cost one round trip:
 *
 * | lookup                       | also read in the same statement                                    |
 * |------------------------------|--------------------------------------------------------------------|
 * | a token or a code            | its grant, its user, its client, whether that client has webhooks   |
 * | a client, on a token request | the code or refresh token the form names, with all of the above    |
 * | a client, otherwise          | what the login session points at: its user, its grant for that client, its record of that client |
 * | a user by id                 | —                                                                  |
 *
 * With `byTurn`, the lookups that requests make in one turn of the event loop share one
 * statement (DataLoader); app.ts chooses, as for writes (store/write-sender.ts).
 */
import DataLoader from 'dataloader';
import type { Client, User } from '../generated/prisma/client.js';
import { currentState, memoised, modelKey } from './request-state.js';
import type { ModelRow } from './request-state.js';
import type { HotSql } from './sql.js';
import { FIND_CLIENTS, FIND_MODELS, FIND_TOKENS, FIND_USERS } from './statements.js';

/**
 * Whether `value` can name something we stored: every id, uid and client_id we write is printable
 * ASCII. Anything else (NUL, which Postgres text cannot hold; a lone surrogate, which jsonb
 * refuses) is answered "absent" without asking the store, so it can never fail a statement it
 * would share with other requests' lookups.
 */
export const storable = (value: string) => /^[\x20-\x7e]{1,1024}$/.test(value);

/** Models whose lookup also brings the grant, user and client the provider asks for next. */
const WITH_RELATIONS = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Json = Record<string, unknown>;

/** The provider-model type of a login session's record of an application it signed in to (oidc/session-end.ts). */
export const SESSION_CLIENT = 'SessionClient';

/** The id of that record: one per session and client. */
export const sessionClientId = (sessionUid: string, clientId: string) => `${sessionUid}.${clientId}`;

interface Related { g_payload: ModelRow['payload'] | null; g_expires_ms: number | null; g_consumed_s: number | null; user: Json | null; client: Json | null; client_has_webhooks: boolean }

/** A client's row also brings its session's record of it. */
interface ClientRow extends Related { s_payload: ModelRow['payload'] | null; s_expires_ms: number | null; s_consumed_s: number | null }

/**
 * A row read as JSON (`to_jsonb`) in the shape Prisma gives it: snake_case columns to camelCase
 * fields (the schema maps them so), `…_at` timestamps to Dates; a new column arrives as Prisma
 * would hand it over.
 */
function asModel<T>(row: Json): T {
  const model: Json = {};
  for (const column in row) {
    const value = row[column];
    model[column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase())] = typeof value === 'string' && column.endsWith('_at') ? new Date(value) : value;
  }
  return model as T;
}

/** Remembers, for the current request, the relations a statement brought along. */
function remember({ grantId, accountId, clientId }: { grantId?: unknown; accountId?: unknown; clientId?: unknown }, row: Related): void {
  const state = currentState();
  if (!state) return;
  if (typeof grantId === 'string') state.models.set(modelKey('Grant', grantId), row.g_payload ? { payload: row.g_payload, expires_ms: row.g_expires_ms, consumed_s: row.g_consumed_s } : null);
  if (typeof accountId === 'string') state.users.set(accountId, row.user ? asModel<User>(row.user) : null);
  if (typeof clientId === 'string') {
    state.clients.set(clientId, row.client ? asModel<Client>(row.client) : null);
    state.clientHasWebhooks.set(clientId, Boolean(row.client && row.client_has_webhooks));
  }
}

/** One statement for `keys` (each a row of the statement's key set): each key gets its row, or null. */
function reader<K extends object, Row>(sql: HotSql, statement: { name: string; text: string }, byTurn: boolean): (key: K) => Promise<Row | null> {
  const load = async (keys: readonly K[]) => {
    const { rows } = await sql<Row & { n: number }>({ ...statement, values: [JSON.stringify(keys.map((key, n) => ({ n, ...key })))] });
    const found = new Map(rows.map((row) => [row.n, row]));
    return keys.map((_, n) => found.get(n) ?? null);
  };
  if (!byTurn) return async (key) => (await load([key]))[0]!;
  const turn = new DataLoader<K, Row | null>(load, { cache: false, batchScheduleFn: (dispatch) => setImmediate(dispatch) });
  return (key) => turn.load(key);
}

export type HotReads = ReturnType<typeof createHotReads>;

export function createHotReads(sql: HotSql, { byTurn = false }: { byTurn?: boolean } = {}) {
  const models = reader<{ type: string; id: string }, ModelRow>(sql, FIND_MODELS, byTurn);
  const tokens = reader<{ type: string; id: string }, ModelRow & Related>(sql, FIND_TOKENS, byTurn);
  const clients = reader<{ client_id: string; account_id: string | null; grant_id: string | null; session_client_id: string | null }, ClientRow>(sql, FIND_CLIENTS, byTurn);
  const users = reader<{ id: string }, { user: Json }>(sql, FIND_USERS, byTurn);

  /** A model instance by id (null: absent); a token or code brings its grant, user and client along. */
  function findModel(type: string, id: string): Promise<ModelRow | null> {
    if (!storable(id)) return Promise.resolve(null);
    return memoised((state) => state.models, modelKey(type, id), async () => {
      if (!WITH_RELATIONS.has(type)) return models({ type, id });
      const row = await tokens({ type, id });
      if (row) remember(row.payload, row);
      return row;
    });
  }

  /** A client by id; on a token request its code or refresh token comes along, else its login session's user, grant and record of it. */
  function findClient(clientId: string): Promise<Client | null> {
    return memoised((state) => state.clients, clientId, async () => {
      const state = currentState();
      const ahead = state?.lookAhead;
      if (state && ahead) {
        state.lookAhead = undefined; // read once: by the first client lookup
        await findModel(ahead.type, ahead.id);
        if (state.clients.has(clientId)) return state.clients.get(clientId)!; // the token names this client
      }
      if (!storable(clientId)) return null;
      const session = state?.session;
      const accountId = typeof session?.accountId === 'string' && UUID.test(session.accountId) ? session.accountId : null;
      const grantId = session?.authorizations?.[clientId]?.grantId;
      const grant = typeof grantId === 'string' && storable(grantId) ? grantId : null;
      const recordId = typeof session?.uid === 'string' && storable(session.uid) ? sessionClientId(session.uid, clientId) : null;
      const row = (await clients({ client_id: clientId, account_id: accountId, grant_id: grant, session_client_id: recordId }))!;
      remember({ clientId, ...(accountId ? { accountId } : {}), ...(grant ? { grantId: grant } : {}) }, row);
      if (state && recordId) state.models.set(modelKey(SESSION_CLIENT, recordId), row.s_payload ? { payload: row.s_payload, expires_ms: row.s_expires_ms, consumed_s: row.s_consumed_s } : null);
      return state ? state.clients.get(clientId)! : (row.client ? asModel<Client>(row.client) : null);
    });
  }

  /** A user by id (null for an id that is not a UUID). */
  function findUser(id: string): Promise<User | null> {
    if (!UUID.test(id)) return Promise.resolve(null);
    return memoised((state) => state.users, id, async () => {
      const row = await users({ id });
      return row ? asModel<User>(row.user) : null;
    });
  }

  return { findModel, findClient, findUser };
}
