/**
 * The oidc-provider adapter contract, and which store keeps which model.
 *
 * Durable models (Grant, AuthorizationCode, AccessToken, RefreshToken, ...) go to Postgres;
 * short-lived, browser-bound ones to Redis (or process memory in the embedded default);
 * clients come from our own `clients` table.
 *
 * @see https://github.com/panva/node-oidc-provider/blob/main/example/my_adapter.js
 */
import { errors } from 'oidc-provider';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { StoreGuard } from '../store/store-failure.js';
import { rememberSession } from '../store/hot-reads.js';

export type { Adapter, AdapterPayload };

/** Builds the adapter for one model name (the provider calls this once per model). */
export type AdapterFor = (model: string) => Adapter;

/** Models that live and die with a browser session: kept in Redis, not in Postgres. */
export const SHORT_LIVED_MODELS: ReadonlySet<string> = new Set([
  'Session', 'Interaction', 'ReplayDetection', 'PushedAuthorizationRequest',
]);

/**
 * `consume` must be atomic: the provider checks `consumed` and then calls `consume`, so two
 * parallel redemptions of one code both pass the check. The store's conditional update lets
 * exactly one win; the other gets the error the provider gives a used code.
 * @see RFC 6749 §4.1.2 (a code MUST NOT be used more than once)
 */
export function alreadyConsumed(model: string): Error {
  const label = model === 'AuthorizationCode' ? 'authorization code' : model;
  return new errors.InvalidGrant(`${label} already consumed`);
}

const METHODS = ['upsert', 'find', 'findByUid', 'findByUserCode', 'consume', 'destroy', 'revokeByGrantId'] as const;

/**
 * The adapter with every call through its store's guard (store/store-failure.ts): a store
 * failure becomes a 503 `temporarily_unavailable` (errors.ts), which the provider answers as it
 * is, instead of its 500 "server_error".
 */
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
      rememberSession(payload ?? undefined);
      return payload;
    },
  };
}

export function createAdapterFactory(stores: {
  durable: AdapterFor;
  shortLived: AdapterFor;
  client: Adapter;
  /** The guards of the durable store (clients too) and of the short-lived one. */
  guards: { durable: StoreGuard; shortLived: StoreGuard };
}): AdapterFor {
  const client = guarded(stores.guards.durable, stores.client);
  return (model) => {
    if (model === 'Client') return client;
    if (model === 'Session') return sessions(guarded(stores.guards.shortLived, stores.shortLived(model)));
    return SHORT_LIVED_MODELS.has(model)
      ? guarded(stores.guards.shortLived, stores.shortLived(model))
      : guarded(stores.guards.durable, stores.durable(model));
  };
}

/** The payload as the provider wants it back: `consumed` set once consumed. */
export function withConsumed(payload: AdapterPayload, consumedAt: number | undefined): AdapterPayload {
  return consumedAt === undefined ? payload : { ...payload, consumed: consumedAt };
}
