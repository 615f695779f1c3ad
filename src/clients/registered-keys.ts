/**
 * The keys a private_key_jwt client registers (RFC 7591 §2 `jwks`, `jwks_uri`; RFC 7523 §2.2):
 * a JWK Set inline, or the https URL of one, never both. Only public keys of asymmetric signing
 * algorithms: client_secret holds a digest (clients/credentials.ts), so no client may
 * authenticate with a key derived from a secret (client_secret_jwt, HS*), and a private part sent
 * along would be a leaked key.
 *
 * @example const problem = jwksProblem(body.jwks); // undefined: usable
 */
import { createPublicKey } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';

/**
 * The JWS algorithms a client may sign its assertions with: asymmetric only (the provider's
 * `enabledJWA.clientAuthSigningAlgValues`, discovery's `token_endpoint_auth_signing_alg_values_supported`).
 */
export const CLIENT_AUTH_ALGORITHMS: readonly string[] = ['RS256', 'PS256', 'ES256', 'EdDSA'];

/** A set of public JWKs, as registered (RFC 7517 §5). */
export interface PublicJwks {
  keys: JsonWebKey[];
}

/** Members that only a private or symmetric JWK has (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const KEY_TYPES = new Set(['RSA', 'EC', 'OKP']);
const MAX_KEYS = 20;
const MAX_URI_LENGTH = 2000;

/** Why the i-th key of a set is not a public signing key a client may use, or undefined. */
export function signingKeyProblem(key: unknown, i: number): string | undefined {
  const at = `jwks.keys[${i}]`;
  if (typeof key !== 'object' || key === null || Array.isArray(key)) return `${at} must be a JSON object (a JWK)`;
  const jwk = key as Record<string, unknown>;
  if (typeof jwk.kty !== 'string' || !KEY_TYPES.has(jwk.kty)) return `${at}.kty must be RSA, EC or OKP: only asymmetric keys sign client assertions here`;
  const secret = PRIVATE_MEMBERS.find((member) => member in jwk);
  if (secret) return `${at} holds a private or secret member ("${secret}"): register public keys only`;
  if (jwk.use !== undefined && jwk.use !== 'sig') return `${at}.use must be "sig" when given`;
  if (jwk.alg !== undefined && !CLIENT_AUTH_ALGORITHMS.includes(jwk.alg as string)) return `${at}.alg must be one of ${CLIENT_AUTH_ALGORITHMS.join(', ')} when given`;
  if (jwk.kid !== undefined && (typeof jwk.kid !== 'string' || jwk.kid === '')) return `${at}.kid must be a non-empty string when given`;
  try {
    createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return `${at} is not a usable ${jwk.kty} public key`;
  }
  return undefined;
}

/** Why `value` is not a JWK Set of public signing keys a client may register, or undefined. */
export function jwksProblem(value: unknown): string | undefined {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (typeof value !== 'object' || value === null || !Array.isArray(keys)) return 'jwks must be a JWK Set: an object with a "keys" array';
  if (keys.length === 0 || keys.length > MAX_KEYS) return `jwks must hold 1 to ${MAX_KEYS} keys`;
  for (const [i, key] of keys.entries()) {
    const problem = signingKeyProblem(key, i);
    if (problem) return problem;
  }
  return undefined;
}

/** Why `value` is not a jwks_uri a client may register (https, no credentials or fragment), or undefined. Where it leads is checked when it is fetched. */
export function jwksUriProblem(value: unknown): string | undefined {
  const url = typeof value === 'string' && value.length <= MAX_URI_LENGTH ? URL.parse(value) : null;
  if (!url || url.protocol !== 'https:') return 'jwks_uri must be an https URL';
  if (url.username || url.password) return 'jwks_uri must not contain credentials';
  if ((value as string).includes('#')) return 'jwks_uri must not contain a fragment';
  return undefined;
}
