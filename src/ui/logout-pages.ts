/**
 * The pages of RP-initiated logout (oidc/provider.ts `LogoutPages`): the question, and the
 * "signed out" page. The question's forms carry the provider's anti-forgery secret of this
 * session (`xsrf`, kept in the session itself and checked by the provider before anything ends);
 * opening the page ends nothing.
 *
 * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html §2, §3
 */
import type { LogoutPages } from '../oidc/provider.js';
import type { Views } from './views.js';

export function logoutPages(views: Views): LogoutPages {
  return {
    confirm(ctx, { action, xsrf, clientName }) {
      views.respond(ctx, 'logout', { title: 'Sign out?', action, xsrf, clientName }, 200);
    },
    signedOut(ctx, { clientName }) {
      views.respond(ctx, 'signed-out', { title: 'Signed out', clientName }, 200);
    },
  };
}
