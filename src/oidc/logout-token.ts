/**
 * A back-channel logout token: a JWT signed with the key ID tokens are signed with now, so a
 * client verifies it against `/api/jwks.php` as it verifies an ID token. Made afresh at each
 * delivery attempt (its `iat` and `exp` are the attempt's), its `jti` too.
 *
 * @see https://openid.net/specs/openid-connect-backchannel-1_0.html §2.4 (claims), §2.6 (sending)
 * @example const token = await logoutToken({ issuer, key: keys.signingKey() })({ clientId, accountId, sid });
 */
import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT } from 'jose';
import type { JWK } from 'jose';

/** The event a logout token carries (§2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** How long a logout token may be accepted: a receiver should take it at once (§2.6 recommends a short life). */
export const LOGOUT_TOKEN_SECONDS = 120;

export interface LogoutSubject {
  clientId: string;
  accountId: string;
  sid: string | null;
}

export function logoutTokens({ issuer, key }: { issuer: string; key: () => { kid: string; alg: string; privateJwk: JWK } }): (subject: LogoutSubject) => Promise<string> {
  return async ({ clientId, accountId, sid }) => {
    const { kid, alg, privateJwk } = key();
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, ...(sid ? { sid } : {}) })
      .setProtectedHeader({ alg, kid, typ: 'logout+jwt' })
      .setIssuer(issuer)
      .setAudience(clientId)
      .setSubject(accountId)
      .setIssuedAt(now)
      .setExpirationTime(now + LOGOUT_TOKEN_SECONDS)
      .setJti(randomUUID())
      .sign(await importJWK(privateJwk, alg));
  };
}
