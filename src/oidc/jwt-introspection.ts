/**
 * Introspection of the service's own RFC 9068 JWT access tokens (resource-indicators.ts). They
 * are not stored, so the provider refuses to introspect them (`unsupported_token_type`); this
 * answers instead, as RFC 7662 §2.2 asks: active only when the JWT is the service's (its
 * signature, `iss`, `typ`, unexpired), issued to the client asking (a client sees only its own
 * tokens, as for every token: provider.ts), and the grant it names still stands (revoking any
 * token of the grant ends it, so introspection sees a revocation at once; a resource server that
 * verifies offline sees it only when the JWT expires). It then reports `aud`, the resource. A
 * machine's token (client_credentials) is under no grant: its `sub` is the client itself
 * (RFC 9068 §2.2), and it stands until it expires.
 *
 * @example const claims = await introspectJwt(token, clientId); // undefined: not one of ours
 */
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import type { JWK } from 'jose';

export interface JwtIntrospectionDependencies {
  issuer: string;
  /** The public keys the service publishes now (a retiring key's included: what it signed still verifies). */
  publicKeys: () => readonly JWK[];
  /** The grant `grantId` names, while it stands. */
  findGrant: (grantId: string) => Promise<{ accountId?: string | undefined; clientId?: string | undefined } | undefined>;
}

/** The RFC 7662 answer for `token`, presented by `clientId`; undefined when it is no JWT access token at all. */
export function jwtIntrospection(deps: JwtIntrospectionDependencies): (token: string, clientId: string) => Promise<Record<string, unknown> | undefined> {
  return async (token, clientId) => {
    try {
      if (decodeProtectedHeader(token).typ !== 'at+jwt') return undefined;
    } catch {
      return undefined;
    }
    const jwks = createLocalJWKSet({ keys: [...deps.publicKeys()] });
    let payload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer: deps.issuer, typ: 'at+jwt' }));
    } catch {
      return { active: false }; // not ours, tampered with, or expired
    }
    if (payload.client_id !== clientId) return { active: false };
    const machine = payload.grant_id === undefined && payload.sub === clientId;
    const grant = typeof payload.grant_id === 'string' ? await deps.findGrant(payload.grant_id) : undefined;
    if (!machine && (!grant || grant.clientId !== payload.client_id || grant.accountId !== payload.sub)) return { active: false };
    const { iss, sub, aud, scope, exp, iat, jti } = payload;
    return { active: true, client_id: clientId, sub, aud, scope, exp, iat, iss, jti, token_type: 'Bearer' };
  };
}
