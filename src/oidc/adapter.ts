/**
 * The provider's seven adapter calls, mapped onto our stores; this file holds no SQL.
 *
 * | model                                              | kept in                                   |
 * |----------------------------------------------------|-------------------------------------------|
 * | Client                                             | our `clients` table, read only            |
 * | Session, Interaction, ReplayDetection, PushedAuthorizationRequest | Redis (shared by every instance), or process memory (embedded) |
 * | every other (Grant, AuthorizationCode, AccessToken, RefreshToken, …) | PostgreSQL `oidc_models` |
 *
 * On PostgreSQL a request reads through store/hot-reads.ts (a token comes with its grant, user and
 * client) and defers its writes to its one write statement (store/request-state.ts): `upsert`
 * and `consume` add to it; `consume` is a condition of that statement, so of two parallel
 * redemptions exactly one writes and the other fails with the error the provider gives a used
 * code. Every other call sends what is deferred first, so the store sees the calls in order.
 * Without a request (jobs, the contract suite) each call is sent at once.
 *
 * Clients are our `clients` rows as the provider's client metadata, read only (clients register
 * at /api/register.php; the provider's own registration compares plaintext secrets); a
 * private_key_jwt client's `jwks_uri` is replaced by the keys found there when a request needs
 * them (client-keys.ts).
 * `client_secret` carries the stored SHA-256 digest (clients/credentials.ts says why); after a
 * rotation, the previous secret's digest and the end of its grace come along as two metadata
 * properties of our own, registered as the provider's `extraClientMetadata`, so they are part of
 * the Client it builds and of its cache key: a rotation or an early end is a new Client on every
 * instance at its next request; provider.ts's `compareClientSecret` reads them back with
 * {@link metadataDigests}.
 *
 * Every call goes through its store's guard: a store failure is a 503 `temporarily_unavailable`
 * (errors.ts) that the provider answers as it is, instead of its 500.
 *
 * @see https://github.com/panva/node-oidc-provider/blob/main/example/my_adapter.js
 */
import { errors } from 'oidc-provider';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { isWellFormedClientId } from '../clients/credentials.js';
import type { SecretDigests } from '../clients/credentials.js';
import { describedBy, logoutFieldsOf } from '../clients/client-metadata.js';
import type { Client, PrismaClient } from '../generated/prisma/client.js';
import type { HotReads } from '../store/hot-reads.js';
import { storable } from '../store/hot-reads.js';
import { currentState, modelKey, Writes } from '../store/request-state.js';
import type { CarriedSession, ModelRow } from '../store/request-state.js';
import type { StoreGuard } from '../store/store-failure.js';
import type { WriteSender } from '../store/write-sender.js';
import { CLOCK_SKEW_SECONDS, MAX_ASSERTION_LIFETIME_SECONDS } from './client-assertions.js';
import { withClientKeys } from './client-keys.js';
import type { ClientKeys } from './client-keys.js';
import { registeredClientMetadata } from './registered-client.js';

export type { Adapter, AdapterPayload };

/** Builds the adapter for one model name (the provider calls this once per model). */
export type AdapterFor = (model: string) => Adapter;

/** Models that live and die with a browser session: kept in Redis, not in PostgreSQL. */
export const SHORT_LIVED_MODELS: ReadonlySet<string> = new Set(['Session', 'Interaction', 'ReplayDetection', 'PushedAuthorizationRequest']);

/**
 * The model whose `find` claims an id it misses, atomically. The provider's
 * ReplayDetection.unique (a client assertion's `jti`, RFC 7523 §3 item 7) finds, then saves on a
 * miss: two requests with one `jti`, on two instances or in one, could both miss before either
 * saved. Here the first find of an id claims it (for {@link REPLAY_CLAIM_SECONDS} at most, until
 * the save that follows sets its real expiry), and every later find sees it.
 */
export const CLAIMED_ON_FIND = 'ReplayDetection';

/** How long a claim lasts without its save: longer than any assertion may live. */
export const REPLAY_CLAIM_SECONDS = MAX_ASSERTION_LIFETIME_SECONDS + 2 * CLOCK_SKEW_SECONDS;

/** What a claimed id holds until its save. */
export const CLAIMED: AdapterPayload = { claimed: true } as AdapterPayload;

/** The provider's error for a code or token consumed twice. @see RFC 6749 §4.1.2 (a code is used once) */
export function alreadyConsumed(model: string): Error {
  return new errors.InvalidGrant(`${model === 'AuthorizationCode' ? 'authorization code' : model} already consumed`);
}

/** The payload as the provider wants it back: `consumed` set once consumed. */
export function withConsumed(payload: AdapterPayload, consumedAt: number | undefined): AdapterPayload {
  return consumedAt === undefined ? payload : { ...payload, consumed: consumedAt };
}

const live = (row: ModelRow | null | undefined): AdapterPayload | undefined => (!row || (row.expires_ms !== null && row.expires_ms <= Date.now())
  ? undefined
  : withConsumed(row.payload as AdapterPayload, row.consumed_s === null ? undefined : Math.floor(row.consumed_s)));

/** Adds to the current request's writes, or sends them at once outside a request. */
async function deferred(send: WriteSender, add: (writes: Writes) => void): Promise<void> {
  const state = currentState();
  if (state) return add(state.writes);
  const alone = new Writes();
  add(alone);
  await send(alone);
}

/** Durable models on PostgreSQL (`oidc_models`, one row per instance). */
export function postgresAdapters(db: { prisma: PrismaClient }, hot: HotReads, send: WriteSender): AdapterFor {
  const { prisma } = db;
  const flush = () => currentState()?.flush();
  const fromPrisma = (row: { payload: unknown; expiresAt: Date | null; consumedAt: Date | null } | null) => live(row
    && { payload: row.payload as ModelRow['payload'], expires_ms: row.expiresAt?.getTime() ?? null, consumed_s: row.consumedAt ? row.consumedAt.getTime() / 1000 : null });

  return (type): Adapter => ({
    async upsert(id, payload, expiresIn) {
      currentState()?.forgetModels(type, id);
      await deferred(send, (writes) => writes.models.set(modelKey(type, id), {
        type, id, payload: JSON.stringify(payload), grantId: payload.grantId ?? null, uid: payload.uid ?? null, userCode: payload.userCode ?? null,
        expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000).toISOString() : null,
      }));
    },
    async find(id) {
      await flush();
      return live(await hot.findModel(type, id));
    },
    async findByUid(uid) {
      if (!storable(uid)) return undefined;
      await flush();
      return fromPrisma(await prisma.oidcModel.findFirst({ where: { type, uid } }));
    },
    async findByUserCode(userCode) {
      if (!storable(userCode)) return undefined;
      await flush();
      return fromPrisma(await prisma.oidcModel.findFirst({ where: { type, userCode } }));
    },
    async consume(id) {
      currentState()?.forgetModels(type, id);
      await deferred(send, (writes) => writes.consumes.push({ type, id, refused: () => alreadyConsumed(type) }));
    },
    async destroy(id) {
      await flush();
      currentState()?.forgetModels(type, id);
      await prisma.oidcModel.deleteMany({ where: { type, id } });
    },
    async revokeByGrantId(grantId) {
      await flush();
      currentState()?.forgetModels(type);
      await prisma.oidcModel.deleteMany({ where: { type, grantId } });
    },
  });
}

/** The previous secret's digest, and when its grace ends (seconds since the epoch, as RFC 7591's `client_secret_expires_at`). */
export const PREVIOUS_SECRET_METADATA = ['previous_client_secret', 'previous_client_secret_expires_at'] as const;

/** `client_secret`, and the previous secret while the row keeps one; nothing for a public client (RFC 7591 `none`). */
export function secretMetadata(client: Client): Record<string, string | number> {
  if (client.clientSecretHash === null) return {};
  const until = client.previousSecretExpiresAt;
  return client.previousSecretHash && until
    ? { client_secret: client.clientSecretHash, previous_client_secret: client.previousSecretHash, previous_client_secret_expires_at: Math.ceil(until.getTime() / 1000) }
    : { client_secret: client.clientSecretHash };
}

/** The digests of a provider Client built from {@link secretMetadata}. */
export function metadataDigests(client: { clientSecret: string; previous_client_secret?: unknown; previous_client_secret_expires_at?: unknown }): SecretDigests {
  const until = client.previous_client_secret_expires_at;
  return {
    current: client.clientSecret,
    previous: typeof client.previous_client_secret === 'string' ? client.previous_client_secret : null,
    previousUntil: typeof until === 'number' ? new Date(until * 1000) : null,
  };
}

/** A row of our `clients` table as the provider's client metadata. */
export function clientMetadata(client: Client): AdapterPayload {
  const registered = describedBy(client);
  if (registered) { // its metadata as registered (registered-client.ts)
    return { ...registeredClientMetadata(registered), client_id: client.clientId, ...secretMetadata(client), client_name: client.clientName };
  }
  return {
    client_id: client.clientId,
    ...secretMetadata(client), // client_secret, and the previous secret in its grace
    client_name: client.clientName,
    redirect_uris: [client.redirectUri!], // the spec's shape always has one (clients_redirect_check)
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
    ...logoutFieldsOf(client), // its post_logout_redirect_uris and backchannel_logout_uri, if registered
  };
}

function clientAdapter(findClient: (clientId: string) => Promise<Client | null>): Adapter {
  const readOnly = (): never => { throw new Error('clients are registered at /api/register.php, not through the provider'); };
  return {
    async find(id) {
      if (!isWellFormedClientId(id)) return undefined;
      const client = await findClient(id);
      return client ? clientMetadata(client) : undefined;
    },
    upsert: readOnly, findByUid: readOnly, findByUserCode: readOnly, consume: readOnly, destroy: readOnly, revokeByGrantId: readOnly,
  };
}

const METHODS = ['upsert', 'find', 'findByUid', 'findByUserCode', 'consume', 'destroy', 'revokeByGrantId'] as const;

/** `adapter` with every call through `guard` (store/store-failure.ts). */
function guarded(guard: StoreGuard, adapter: Adapter): Adapter {
  const wrapped = {} as Record<(typeof METHODS)[number], unknown>;
  for (const method of METHODS) {
    const call = adapter[method] as (...args: unknown[]) => Promise<unknown>;
    wrapped[method] = (...args: unknown[]) => guard(() => call.apply(adapter, args));
  }
  return wrapped as unknown as Adapter;
}

/** The login session a request carries is remembered for its client lookup (store/hot-reads.ts). */
function sessions(adapter: Adapter): Adapter {
  return {
    ...adapter,
    async find(id) {
      const payload = await adapter.find(id);
      const state = currentState();
      if (payload && state) state.session = payload as CarriedSession;
      return payload;
    },
  };
}

export function createAdapterFactory(stores: {
  durable: AdapterFor;
  shortLived: AdapterFor;
  findClient: (clientId: string) => Promise<Client | null>;
  /** The guards of the durable store (clients too) and of the short-lived one. */
  guards: { durable: StoreGuard; shortLived: StoreGuard };
  /** The keys at a client's jwks_uri for the request's assertion (fetched outside the store's guard). */
  clientKeys: ClientKeys;
}): AdapterFor {
  const client = withClientKeys(guarded(stores.guards.durable, clientAdapter(stores.findClient)), stores.clientKeys);
  return (model) => {
    if (model === 'Client') return client;
    if (model === 'Session') return sessions(guarded(stores.guards.shortLived, stores.shortLived(model)));
    return SHORT_LIVED_MODELS.has(model)
      ? guarded(stores.guards.shortLived, stores.shortLived(model))
      : guarded(stores.guards.durable, stores.durable(model));
  };
}
