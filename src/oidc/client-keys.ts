/**
 * The keys a request's client assertion is checked with, for a private_key_jwt client whose keys
 * are at a `jwks_uri` (clients/key-sets.ts fetches and keeps them). Left to itself the provider
 * fetches a client's `jwks_uri` when it meets a key it lacks, but not again until its copy is at
 * least 60 s old, so a client's new key would fail until then; and it keeps no copy for a
 * metadata document's client at all, which it builds afresh for every request. So it is handed
 * the keys the key-set cache vouches for:
 *
 * - a client of ours (read through the adapter) gets them inline as `jwks` ({@link withClientKeys}):
 *   the provider's Client, which it caches by its metadata, changes when they do;
 * - a metadata document's client keeps its `jwks_uri`; the document check makes sure of its keys
 *   for the request (clients/metadata-document.ts), and the provider's fetch of that URL is then
 *   answered from the cache ({@link keySetFetch}).
 *
 * Only a request that carries a client assertion needs keys: no other fetches any.
 *
 * @example adapter: withClientKeys(clientAdapter, clientKeys(keySets)); provider option: fetch: keySetFetch(keySets, guardedFetch(…))
 */
import Provider, { errors } from 'oidc-provider';
import { KeySetError } from '../clients/key-sets.js';
import type { KeySets } from '../clients/key-sets.js';
import type { PublicJwks } from '../clients/registered-keys.js';
import type { Adapter } from 'oidc-provider';

/** The keys at `uri` for the assertion `ctx` (default: the provider's current request) carries; undefined when it carries none. */
export type ClientKeys = (uri: string, ctx?: unknown) => Promise<PublicJwks | undefined>;

interface RequestLike {
  state?: Record<symbol, unknown>;
  oidc?: { params?: Record<string, unknown> };
}

const GIVEN = Symbol('key sets this request was given');

const requestOf = (ctx: unknown) => (ctx ?? Provider.ctx) as RequestLike | undefined;

export function clientKeys(keySets: Pick<KeySets, 'keysFor'>): ClientKeys {
  return async (uri, ctx) => {
    const request = requestOf(ctx);
    const assertion = request?.oidc?.params?.client_assertion;
    if (typeof assertion !== 'string' || assertion === '') return undefined;
    let keys: PublicJwks;
    try {
      keys = await keySets.keysFor(uri, assertion);
    } catch (error) {
      if (!(error instanceof KeySetError)) throw error;
      // RFC 6749 §5.2: the client could not be authenticated; why, in words that name no address.
      throw Object.assign(new errors.InvalidClientAuth(`jwks_uri ${uri}: ${error.detail}`), { error_description: `the client's key set (jwks_uri) cannot be used: ${error.reason}` });
    }
    if (request?.state) ((request.state[GIVEN] ??= new Set<string>()) as Set<string>).add(uri);
    return keys;
  };
}

/** The provider's `fetch`: a key set this request was given is answered from the cache, anything else by `fetch` (the outbound guard). */
export function keySetFetch<F extends (url: string | URL, init?: never) => Promise<Response>>(keySets: Pick<KeySets, 'kept'>, fetch: F): F {
  return ((url: string | URL, init?: never) => {
    const given = requestOf(undefined)?.state?.[GIVEN] as Set<string> | undefined;
    const keys = given?.has(String(url)) ? keySets.kept(String(url)) : undefined;
    if (!keys) return fetch(url, init);
    return Promise.resolve(new Response(JSON.stringify(keys), { status: 200, headers: { 'content-type': 'application/json' } }));
  }) as F;
}

/** The client adapter, with a private_key_jwt client's `jwks_uri` replaced by the keys found there, for a request with an assertion. */
export function withClientKeys(adapter: Adapter, keys: ClientKeys): Adapter {
  return {
    ...adapter,
    async find(id) {
      const payload = await adapter.find(id);
      const uri = payload?.jwks_uri;
      if (typeof uri !== 'string') return payload;
      const jwks = await keys(uri);
      if (!jwks) return payload;
      const { jwks_uri: _replaced, ...rest } = payload!;
      return { ...rest, jwks };
    },
  };
}
