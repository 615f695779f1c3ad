/**
 * private_key_jwt client assertions (RFC 7523 §2.2, §3; RFC 7521 §4.2): the provider checks them
 * itself (lib/shared/jwt_client_auth.js): the algorithm (asymmetric only: `enabledJWA`), `exp`,
 * `jti`, `iss` = `sub` = the client (the client is the assertion's `sub`, so neither a
 * `client_id` nor a `kid` need come with it), `aud`, the signature with the client's keys (by
 * `kid`, or by algorithm without one), `nbf` and `exp` within the clock skew, and `jti` unused
 * until the assertion expires (its ReplayDetection model, kept in Redis: every instance sees it,
 * adapter.ts). What RFC 7523 §3 leaves to the authorization server is decided here:
 *
 * - `aud` names the issuer or the token endpoint, at revocation and introspection too (§3 item 3;
 *   the provider would also take the URL of the endpoint called);
 * - `iat`, when given, is not in the future beyond the skew (§3 item 6);
 * - the lifetime is bounded: `exp` at most {@link MAX_ASSERTION_LIFETIME_SECONDS} after `iat` (or
 *   after now without one) (§3 item 4: an `exp` unreasonably far off may be refused), which also
 *   bounds how long a `jti` is remembered.
 *
 * Every refusal is the provider's `invalid_client` (401), its reason in `error_detail` for the log.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-3
 */
import { errors } from 'oidc-provider';
import type { Configuration } from 'oidc-provider';

/** The clock skew allowed on `exp`, `nbf` and `iat` (the provider's `clockTolerance`), in seconds. */
export const CLOCK_SKEW_SECONDS = 30;

/** The longest an assertion may live, from `iat` (or now) to `exp`, in seconds. */
export const MAX_ASSERTION_LIFETIME_SECONDS = 3600;

type ClaimsCheck = NonNullable<Configuration['assertJwtClientAuthClaimsAndHeader']>;

const refuse = (detail: string) => new errors.InvalidClientAuth(detail);

/** The provider's `assertJwtClientAuthClaimsAndHeader`; `audiences` are the issuer and the token endpoint's URL. */
export function assertionClaimsCheck(audiences: readonly string[]): ClaimsCheck {
  const accepted = new Set(audiences);
  return (_ctx, claims) => {
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.some((value) => typeof value === 'string' && accepted.has(value))) {
      throw refuse(`aud (JWT audience) must be the issuer or the token endpoint: ${[...accepted].join(' or ')}`);
    }
    const now = Math.floor(Date.now() / 1000);
    const { iat, exp } = claims;
    if (iat !== undefined && (typeof iat !== 'number' || iat > now + CLOCK_SKEW_SECONDS)) throw refuse('iat (issued at) must be a time not in the future');
    if (typeof exp === 'number' && exp - (typeof iat === 'number' ? iat : now) > MAX_ASSERTION_LIFETIME_SECONDS) {
      throw refuse(`the client_assertion may live at most ${MAX_ASSERTION_LIFETIME_SECONDS} seconds (exp - iat)`);
    }
  };
}
