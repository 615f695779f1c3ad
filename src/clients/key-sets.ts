/**
 * Clients' key sets (`jwks_uri`, RFC 7591 §2), fetched through the outbound guard and kept in this
 * instance's memory, so that checking a private_key_jwt assertion (RFC 7523 §3) costs no request
 * out while the set is fresh:
 *
 * - **Fetched** through the guard's `keySets` policy (outbound/policies.ts): https only, private
 *   networks refused unless CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS, its own bounded lookups, at
 *   most CLIENT_JWKS_MAX_BYTES within CLIENT_METADATA_TIMEOUT_MS, no redirect followed.
 * - **Kept** as its `Cache-Control: max-age` (or `Expires`) says, within the documents' bounds
 *   (CLIENT_METADATA_CACHE_MIN_SECONDS … _MAX_SECONDS); a stale set is fetched again when next needed.
 * - **Fetched again early**, at most once every CLIENT_JWKS_REFETCH_SECONDS, when no key of the
 *   set verifies the assertion's signature (a client that rotated its keys, with or without a
 *   `kid`): so a client's new key works at once, and forged assertions cannot make us hammer the
 *   client's server. A failed early fetch keeps the set it was to replace.
 * - **Usable keys only**: public keys of the algorithms clients sign with (registered-keys.ts); a
 *   member that is not one (an encryption key, a private key published by mistake) is left out.
 *
 * Kept in a Map of at most {@link MAX_SETS} sets, the oldest dropped first (a bounded Map is all
 * this needs: entries expire by their own clock).
 *
 * @example const keys = await keySets.keysFor('https://client.example/jwks.json', assertion);
 */
import { compactVerify, decodeProtectedHeader, importJWK } from 'jose';
import type { JWK } from 'jose';
import { OutboundFetchError } from '../outbound/guarded-fetch.js';
import { CLIENT_AUTH_ALGORITHMS, signingKeyProblem } from './registered-keys.js';
import type { PublicJwks } from './registered-keys.js';

/** Key sets kept at most, per instance. */
export const MAX_SETS = 1000;

/** Why no key set could be had: `reason` may be shown to the client, `detail` goes to the log. */
export class KeySetError extends Error {
  override name = 'KeySetError';
  constructor(readonly reason: string, readonly detail: string = reason) {
    super(reason);
  }
}

export interface KeySetsDependencies {
  /** A guarded GET (outbound/guarded-fetch.ts, its `keySets` policy and CLIENT_JWKS_MAX_BYTES). */
  fetch: (url: string, init: { headers: Record<string, string> }) => Promise<Response>;
  cacheMinSeconds: number;
  cacheMaxSeconds: number;
  refetchSeconds: number;
  /** Told of every failed fetch (the log line). */
  onFailure?: (uri: string, error: KeySetError) => void;
  clock?: () => number;
}

export interface KeySets {
  /**
   * The usable keys at `uri` to check `assertion` with: the kept set while fresh, else fetched;
   * fetched again early (see above) when none of its keys verifies the assertion's signature.
   * Rejects with a {@link KeySetError} when no set can be had.
   */
  keysFor(uri: string, assertion: string): Promise<PublicJwks>;
  /** The set kept for `uri`, fresh or not, without fetching. */
  kept(uri: string): PublicJwks | undefined;
}

interface Entry {
  keys: PublicJwks;
  freshUntil: number;
  /** When it was last fetched, or a fetch of it last tried (the early fetch's rate). */
  triedAt: number;
  /** Verification keys imported from `keys`, by JWK. */
  imported: Map<JWK, Promise<VerificationKey | undefined>>;
}

type VerificationKey = Awaited<ReturnType<typeof importJWK>>;

/** The JWK key types (and curves) each client-authentication algorithm signs with. */
function fits(key: JWK, alg: string): boolean {
  if (key.alg !== undefined && key.alg !== alg) return false;
  if (alg.startsWith('RS') || alg.startsWith('PS')) return key.kty === 'RSA';
  if (alg === 'ES256') return key.kty === 'EC' && key.crv === 'P-256';
  if (alg === 'EdDSA') return key.kty === 'OKP' && (key.crv === 'Ed25519' || key.crv === 'Ed448');
  return false;
}

/** How long a response may be kept, in seconds: its max-age, else its Expires, within the bounds. */
function lifetime(response: Response, min: number, max: number, now: number): number {
  const maxAge = /(?:^|,)\s*max-age\s*=\s*(\d+)/i.exec(response.headers.get('cache-control') ?? '')?.[1];
  const expires = Date.parse(response.headers.get('expires') ?? '');
  const seconds = maxAge !== undefined ? Number(maxAge) : Number.isNaN(expires) ? min : Math.floor((expires - now) / 1000);
  return Math.max(min, Math.min(max, seconds));
}

/** The usable keys of a fetched set, or a {@link KeySetError}. */
function usableKeys(body: unknown): PublicJwks {
  const keys = (body as { keys?: unknown } | null)?.keys;
  if (typeof body !== 'object' || body === null || !Array.isArray(keys)) throw new KeySetError('it is not a JWK Set (an object with a "keys" array)');
  const usable = keys.filter((key, i) => signingKeyProblem(key, i) === undefined) as JWK[];
  if (usable.length === 0) throw new KeySetError(`it holds no public signing key for ${CLIENT_AUTH_ALGORITHMS.join(', ')}`);
  return { keys: usable };
}

export function createKeySets(deps: KeySetsDependencies): KeySets {
  const clock = deps.clock ?? Date.now;
  const sets = new Map<string, Entry>();
  const pending = new Map<string, Promise<Entry>>();

  async function download(uri: string): Promise<Entry> {
    let response: Response;
    let body: unknown;
    try {
      response = await deps.fetch(uri, { headers: { accept: 'application/json' } });
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new KeySetError(`its server answered ${response.status}, not 200`);
      }
      const text = await response.text();
      try {
        body = JSON.parse(text);
      } catch {
        throw new KeySetError('it is not JSON');
      }
    } catch (error) {
      if (error instanceof KeySetError) throw error;
      if (error instanceof OutboundFetchError) throw new KeySetError(error.message, error.detail);
      throw new KeySetError('it could not be fetched', String(error));
    }
    const now = clock();
    const entry = { keys: usableKeys(body), triedAt: now, freshUntil: now + lifetime(response, deps.cacheMinSeconds, deps.cacheMaxSeconds, now) * 1000, imported: new Map() };
    sets.delete(uri);
    if (sets.size >= MAX_SETS) sets.delete(sets.keys().next().value!);
    sets.set(uri, entry);
    return entry;
  }

  /** One fetch of `uri` at a time, whoever asks. */
  function fetched(uri: string): Promise<Entry> {
    let request = pending.get(uri);
    if (!request) {
      request = download(uri).catch((error: unknown) => {
        if (error instanceof KeySetError) deps.onFailure?.(uri, error);
        throw error;
      }).finally(() => pending.delete(uri));
      pending.set(uri, request);
    }
    return request;
  }

  /** Whether a key of `entry` verifies the signature of `assertion` (its claims are the provider's to check). */
  async function verifies(entry: Entry, assertion: string): Promise<boolean> {
    let header;
    try {
      header = decodeProtectedHeader(assertion);
    } catch {
      return true; // not a JWS: the provider refuses it, no key set would help
    }
    const { alg, kid } = header;
    if (typeof alg !== 'string' || !CLIENT_AUTH_ALGORITHMS.includes(alg)) return true; // refused by the provider whatever the keys
    const candidates = entry.keys.keys.filter((key) => fits(key as JWK, alg) && (kid === undefined || (key as JWK).kid === kid)) as JWK[];
    for (const jwk of candidates) {
      let imported = entry.imported.get(jwk);
      if (!imported) entry.imported.set(jwk, imported = importJWK(jwk, alg).catch(() => undefined));
      const key = await imported;
      if (!key) continue;
      try {
        await compactVerify(assertion, key, { algorithms: [alg] });
        return true;
      } catch { /* the next candidate */ }
    }
    return false;
  }

  return {
    async keysFor(uri, assertion) {
      const kept = sets.get(uri);
      let entry = kept && kept.freshUntil > clock() ? kept : await fetched(uri);
      if (await verifies(entry, assertion)) return entry.keys;
      if (clock() - entry.triedAt < deps.refetchSeconds * 1000) return entry.keys; // tried lately: the provider refuses the assertion
      entry.triedAt = clock();
      try {
        entry = await fetched(uri);
      } catch {
        return entry.keys; // the set it was to replace stays, fresh as it was
      }
      return entry.keys;
    },
    kept: (uri) => sets.get(uri)?.keys,
  };
}
