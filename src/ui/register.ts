/**
 * `/api/register.php`: the registration page (form, CSRF-protected) and the same POST with a
 * JSON body for scripts. The client secret is in the response this once and never again.
 * A JSON body with `redirect_uris` is RFC 7591's dialect (clients/dynamic-registration.ts), the
 * `registration_endpoint` of the discovery documents. With REGISTRATION_INITIAL_ACCESS_TOKEN set,
 * every door asks for it (clients/registration-lock.ts): the JSON shapes as a Bearer token, the
 * form in a field of its own; nothing is checked or stored before the token is.
 *
 * @see ../shared/spec/oauth-service-spec.md "Client registration"
 */
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { ServiceError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import type { ClientStore } from '../clients/client-store.js';
import { ClientInputError } from '../clients/client-store.js';
import { isDynamicRegistration } from './dynamic-registration.js';
import { logoutFieldsOf } from '../clients/client-metadata.js';
import type { RegistrationLock } from '../clients/registration-lock.js';
import { REGISTRATION_PATH } from '../oidc/routes.js';
import { checkCsrf, csrfToken } from './csrf.js';
import { field } from './form.js';
import type { Views } from './views.js';
import { ANONYMOUS } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';

export const REGISTER_PATH = REGISTRATION_PATH;

export interface RegisterDependencies {
  clients: ClientStore;
  views: Views;
  body: Middleware;
  /** RFC 7591 (clients/dynamic-registration.ts), reached once the lock is open. */
  dynamic: (ctx: Context) => Promise<void>;
  lock: RegistrationLock;
}

/** The page's GET and POST; its path and what else it answers: http/route-table.ts. */
export function registerRoutes({ clients, views, body, dynamic, lock }: RegisterDependencies): { GET: Middleware; POST: Middleware } {

  function form(ctx: Context, locals: { clientName?: string; redirectUri?: string; postLogoutRedirectUri?: string; backchannelLogoutUri?: string; error?: string } = {}, status = 200) {
    views.respond(ctx, 'register', {
      title: 'Register an application', csrf: csrfToken(ctx), clientName: '', redirectUri: '', postLogoutRedirectUri: '', backchannelLogoutUri: '', locked: lock.locked, ...locals,
    }, status);
  }

  const post: Middleware = async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const json = Boolean(ctx.is('json'));
    if (!json && !ctx.is('urlencoded')) {
      throw new ServiceError('invalid_request', 'send the form as application/x-www-form-urlencoded, or JSON as application/json');
    }
    if (json) lock.requireBearer(ctx);
    if (json && isDynamicRegistration((ctx.request as { body?: unknown }).body)) return dynamic(ctx);
    if (!json) checkCsrf(ctx);
    const input = {
      clientName: field(ctx, 'client_name'), redirectUri: field(ctx, 'redirect_uri'),
      postLogoutRedirectUri: field(ctx, 'post_logout_redirect_uri'), backchannelLogoutUri: field(ctx, 'backchannel_logout_uri'),
    };
    const refused = json ? undefined : lock.problem(field(ctx, 'initial_access_token'));
    if (refused) return form(ctx, { ...input, error: `Registration is closed to the public: ${refused.replace(' (Authorization: Bearer …)', '')}. Ask the operator of this service for it.` }, 401);
    let registered;
    try {
      registered = await clients.register(input, requestContext(ctx, ANONYMOUS));
    } catch (error) {
      if (!(error instanceof ClientInputError)) throw error;
      if (json) throw new ServiceError('invalid_request', error.message);
      return form(ctx, { ...input, error: error.message }, 400);
    }
    const { client, clientSecret } = registered;
    noteClient(ctx, client.clientId);
    const logout = logoutFieldsOf(client);
    const result = {
      client_id: client.clientId, client_secret: clientSecret, client_name: client.clientName, redirect_uri: client.redirectUri,
      ...(logout.post_logout_redirect_uris ? { post_logout_redirect_uri: logout.post_logout_redirect_uris[0] } : {}),
      ...(logout.backchannel_logout_uri ? { backchannel_logout_uri: logout.backchannel_logout_uri } : {}),
    };
    if (json) {
      ctx.status = 201;
      ctx.body = result;
      return;
    }
    views.respond(ctx, 'registered', {
      title: 'Application registered', clientId: result.client_id, clientSecret, clientName: result.client_name, redirectUri: result.redirect_uri,
      postLogoutRedirectUri: result.post_logout_redirect_uri, backchannelLogoutUri: result.backchannel_logout_uri,
    }, 201);
  };

  return { GET: (ctx) => form(ctx), POST: compose([body, post]) };
}
