/**
 * After the provider's end-session confirmation (RP-initiated logout: the user answered our
 * logout page), ends what the session made, through the one seam (session-end.ts): with "Sign
 * out" (`logout=yes`) the whole session, which the provider has just destroyed; with "Stay signed
 * in" the part of the application that asked (the provider removed it from the session).
 * The provider's own back-channel sending is off (provider.ts): the tokens go through the outbox.
 *
 * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html §2, node-oidc-provider lib/actions/end_session.js
 */
import type { Middleware } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { requestContext, userActor } from '../audit/audit-log.js';
import type { SessionEnd } from './session-end.js';

export function endSessionGlue(sessions: Pick<SessionEnd, 'end'>): Middleware {
  return async (ctx, next) => {
    await next();
    const { oidc } = ctx as unknown as KoaContextWithOIDC;
    // The provider answers a confirmation it carried out with 303 to where the user goes next.
    if (ctx.status !== 303 || !oidc?.session?.accountId) return;
    const { session, params, client } = oidc;
    const accountId = session.accountId!;
    const scope = params?.logout ? { sessionUid: session.uid } : client ? { sessionUid: session.uid, clientIds: [client.clientId] } : undefined;
    if (scope) await sessions.end(scope, 'logout', requestContext(ctx, userActor(accountId)));
  };
}
