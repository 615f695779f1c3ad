/**
 * The registration lock: with REGISTRATION_INITIAL_ACCESS_TOKEN set, no client comes into being at
 * /api/register.php without that token, whichever door it takes: RFC 7591 and the spec's JSON shape
 * as `Authorization: Bearer …` (RFC 7591 §3, answered as RFC 6750 §3 says), the page's form in its
 * `initial_access_token` field. Kept as a digest and compared in constant time, as client secrets are.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7591#section-3
 * @example const lock = registrationLock(config.standardClients.registrationInitialAccessToken); lock.problem(bearerToken(ctx));
 */
import type { Context } from 'koa';
import { ServiceError } from '../errors.js';
import { hashClientSecret, verifyClientSecret } from './credentials.js';

export interface RegistrationLock {
  /** Whether registration needs the token. */
  readonly locked: boolean;
  /** Why `presented` does not open the lock (undefined: it does, or registration is open). */
  problem(presented: string | undefined): string | undefined;
  /** For the JSON doors: the Bearer token checked, or a 401 `invalid_token` with its challenge. */
  requireBearer(ctx: Context): void;
}

/** The Bearer token of the request's Authorization header, if it has one (RFC 6750 §2.1). */
export function bearerToken(ctx: Context): string | undefined {
  return /^Bearer ([\x21-\x7e]+)$/i.exec(ctx.get('authorization'))?.[1];
}

export function registrationLock(initialAccessToken: string | undefined): RegistrationLock {
  const expected = initialAccessToken === undefined ? undefined : hashClientSecret(initialAccessToken);
  const problem = (presented: string | undefined) => {
    if (expected === undefined) return undefined;
    if (presented === undefined || presented === '') return 'registration requires an initial access token (Authorization: Bearer …)';
    return verifyClientSecret(presented, expected) ? undefined : 'the initial access token is not valid';
  };
  return {
    locked: expected !== undefined,
    problem,
    requireBearer(ctx) {
      const refused = problem(bearerToken(ctx));
      if (!refused) return;
      // RFC 7591 §3 → RFC 6750 §3: the challenge names the error.
      ctx.set('WWW-Authenticate', 'Bearer error="invalid_token", error_description="registration requires the initial access token"');
      throw new ServiceError('invalid_token', refused);
    },
  };
}
