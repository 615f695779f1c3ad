/**
 * After the provider's end-session confirmation (RP-initiated logout: the user answered our
 * logout page), ends what the session made, through the one seam (session-end.ts): with "Sign
 * out" (`logout=yes`) the whole session, which the provider has just destroyed; with "Stay signed
 * in" the part of the application that asked (the provider removed it from the session).
 * The provider's own back-channel sending is off (provider.ts): the tokens go through the outbox.
 *
 * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html §2, node-oidc-provider lib/actions/end_session.js
 */
import type { Context, Middleware } from 'koa';
import { ServiceError, specErrorCode, specStatus } from '../errors.js';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { userActor } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';
import { ROUTES } from './routes.js';
import type { SessionEnd } from './session-end.js';

/** The parameters of RP-initiated logout (§2); anything else in a form is dropped. */
const LOGOUT_PARAMETERS = ['id_token_hint', 'logout_hint', 'client_id', 'post_logout_redirect_uri', 'state', 'ui_locales'] as const;

/**
 * `POST /api/logout.php` (RP-Initiated Logout §2: the OP supports GET and POST) answered with 303
 * to the same parameters by GET. A cross-site POST carries no `SameSite=Lax` session cookie, and
 * the provider's own POST support wants `SameSite=None` cookies everywhere; the GET it is sent on
 * is a top-level navigation, which carries them, so the user is asked with their session known.
 * `body`: our form parser (http/body.ts): a body that does not decode is a 400.
 */
export function logoutPostAsGet(body: Middleware): Middleware {
  return (ctx) => body(ctx, async () => {
    if (!ctx.is('urlencoded')) throw new ServiceError('invalid_request', 'send the logout parameters as a form (application/x-www-form-urlencoded), or as a query by GET');
    const form = (ctx.request as unknown as { body?: Record<string, unknown> }).body ?? {};
    const query = new URLSearchParams();
    for (const name of LOGOUT_PARAMETERS) {
      const value = form[name];
      if (value === undefined) continue;
      if (typeof value !== 'string') throw new ServiceError('invalid_request', `${name} must be given once`);
      query.set(name, value);
    }
    (ctx as Context).status = 303;
    ctx.redirect(`${ROUTES.end_session}${query.size ? `?${query}` : ''}`);
  });
}

/**
 * A logout error the provider answered as JSON itself (a caller that prefers JSON; browsers get
 * our page through `renderError`, with these statuses): the spec's status for its code, as every
 * other answer of ours has it (`invalid_client` 401).
 */
export const logoutErrors: Middleware = async (ctx, next) => {
  await next();
  const body = ctx.body as { error?: unknown } | undefined;
  if (ctx.status >= 400 && ctx.response.is('json') && typeof body?.error === 'string') {
    const code = specErrorCode(body.error);
    ctx.status = specStatus(code, ctx.status);
    ctx.body = { ...body, error: code };
  }
};

export function endSessionGlue(sessions: Pick<SessionEnd, 'end'>): Middleware {
  return async (ctx, next) => {
    await logoutErrors(ctx, next);
    const { oidc } = ctx as unknown as KoaContextWithOIDC;
    // The provider answers a confirmation it carried out with 303 to where the user goes next.
    if (ctx.status !== 303 || !oidc?.session?.accountId) return;
    const { session, params, client } = oidc;
    const accountId = session.accountId!;
    const scope = params?.logout ? { sessionUid: session.uid } : client ? { sessionUid: session.uid, clientIds: [client.clientId] } : undefined;
    if (scope) await sessions.end(scope, 'logout', requestContext(ctx, userActor(accountId)));
  };
}
