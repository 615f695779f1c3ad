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

export function createAdapterFactory(stores: {
  durable: AdapterFor;
  shortLived: AdapterFor;
  client: Adapter;
}): AdapterFor {
  return (model) => {
    if (model === 'Client') return stores.client;
    return SHORT_LIVED_MODELS.has(model) ? stores.shortLived(model) : stores.durable(model);
  };
}

/** The payload as the provider wants it back: `consumed` set once consumed. */
export function withConsumed(payload: AdapterPayload, consumedAt: number | undefined): AdapterPayload {
  return consumedAt === undefined ? payload : { ...payload, consumed: consumedAt };
}
