/**
 * Where requests to the provider's other endpoints are reshaped for the spec (the token
 * endpoint's steps are token-endpoint.ts). Each rule names the spec line it serves; everything
 * else is the provider's own behaviour at the spec's paths. app.ts puts each in front of the
 * provider on its route.
 *
 * @see ../shared/spec/oauth-service-spec.md "Endpoints", "Errors"
 */
import type { Middleware } from 'koa';
import type { Context } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { canNameClient } from '../clients/metadata-document.js';
import { StoreUnavailableError } from '../errors.js';
import type { ErrorBody, ErrorResponder } from '../errors.js';
import { asUnavailable } from '../store/store-failure.js';

/**
 * Spec: client_id, redirect_uri and response_type are all required, and redirect_uri "must
 * match the registered one": a request without it, or with a client_id that cannot name a
 * client, is refused with `invalid_request` and never redirected (RFC 6749 §4.1.2.1).
 *
 * Spec: the user information endpoint is the one protected resource, and a spec client sends no
 * `scope`: every request asks for `openid`, the scope that releases it.
 *
 * Spec: only the code flow exists, whose responses travel in the query (RFC 6749 §4.1.2.1).
 * The provider answers a `token` response_type's error in the fragment, which the client's
 * server never sees; it goes in the query here too, unless the client asked for the fragment
 * (`response_mode=fragment`; `form_post` is a page, not a redirect). HEAD is read as GET is.
 */
export const authorizeGlue = (
  answerUntrusted: ErrorResponder,
  /** The scopes declared for the resource server `indicator` names (space-separated), if it names one. */
  resourceScope: (indicator: string) => Promise<string | undefined>,
): Middleware => async (ctx, next) => {
  const { client_id: clientId, redirect_uri: redirectUri, scope, response_mode: responseMode } = ctx.query;
  const refuse = (description: string) => answerUntrusted(ctx, { error: 'invalid_request', error_description: description }, 400);
  if (typeof clientId === 'string' && clientId !== '' && !canNameClient(clientId)) {
    return refuse('client_id is malformed');
  }
  if (redirectUri === undefined || redirectUri === '') return refuse("missing required parameter 'redirect_uri'");
  if (ctx.query.resource !== undefined) {
    // RFC 8707: a request for a resource server's token asks for that server's scopes, not for
    // the profile's `openid`; one without `scope` asks for every scope declared for it.
    const declared = scope === undefined && typeof ctx.query.resource === 'string' ? await resourceScope(ctx.query.resource) : undefined;
    if (declared) ctx.query = { ...ctx.query, scope: declared };
  } else if (scope === undefined || typeof scope === 'string') {
    const scopes = new Set((scope ?? '').split(' ').filter(Boolean));
    if (!scopes.has('openid')) ctx.query = { ...ctx.query, scope: ['openid', ...scopes].join(' ') };
  }
  try {
    await next();
  } catch (error) {
    redirectUnavailable(ctx, redirectUri, asUnavailable(undefined, error));
  }
  if (ctx.status !== 303) return;
  const answered = ctx.response.get('Location');
  let location = answered;
  if (responseMode !== 'fragment' && location.includes('#error=')) {
    const [target, fragment] = location.split('#', 2) as [string, string];
    location = `${target}${target.includes('?') ? '&' : '?'}${fragment}`;
  }
  location = described(location);
  if (location !== answered) ctx.redirect(location); // Location and the body's link alike
};

/**
 * RFC 6749 §4.1.2.1: a store that fails once the provider has redirected to the client
 * (it persists the session after its authorization error handler has answered, so a session
 * write that fails escapes that handler) sends `temporarily_unavailable` back to the client too:
 * the provider had already trusted the client and this redirect_uri. Anything else is rethrown
 * (a 503 page, or the error it is).
 */
function redirectUnavailable(ctx: Context, redirectUri: unknown, error: unknown): void {
  const answered = ctx.status === 303 ? ctx.response.get('Location') : '';
  if (!(error instanceof StoreUnavailableError) || typeof redirectUri !== 'string' || answered === '') throw error;
  let to: URL;
  let from: URL;
  try {
    [to, from] = [new URL(redirectUri), new URL(answered)];
  } catch {
    throw error; // the provider redirected to its login page, not to the client
  }
  if (`${from.origin}${from.pathname}` !== `${to.origin}${to.pathname}`) throw error;
  const inFragment = from.hash.length > 1; // where the provider answered (response_mode=fragment)
  const iss = (inFragment ? new URLSearchParams(from.hash.slice(1)) : from.searchParams).get('iss');
  const params = inFragment ? new URLSearchParams() : to.searchParams;
  params.set('error', error.error);
  params.set('error_description', error.error_description!);
  if (typeof ctx.query.state === 'string') params.set('state', ctx.query.state);
  if (iss !== null) params.set('iss', iss);
  if (inFragment) to.hash = params.toString();
  ctx.redirect(to.href);
  ctx.status = 303;
}

/** Errors the provider sends back to the client without an `error_description` (docs/api.md "Errors": every error has one). */
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  request_not_supported: 'the request parameter (a request object) is not supported',
  request_uri_not_supported: 'the request_uri parameter is not supported',
  registration_not_supported: 'the registration parameter is not supported',
};

/** `location` with a description after its `error` (in the query or the fragment), where the provider gave none. */
function described(location: string): string {
  if (!location.includes('error=')) return location;
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    return location; // a relative Location (the login page) carries no error
  }
  const inFragment = url.hash.length > 1;
  const params = new URLSearchParams(inFragment ? url.hash.slice(1) : url.search);
  const error = params.get('error');
  const description = error === null ? undefined : DESCRIPTIONS[error];
  if (description === undefined || params.has('error_description')) return location;
  const withDescription = new URLSearchParams([...params].flatMap(([name, value]): [string, string][] => (
    name === 'error' ? [[name, value], ['error_description', description]] : [[name, value]]))).toString();
  if (inFragment) url.hash = withDescription;
  else url.search = withDescription;
  return url.href;
}

/**
 * The provider's resume path (`/api/authorize.php/<uid>`, where login and consent hand back)
 * carries no parameters: the interaction is found by its cookie. A query there only reaches
 * the provider's authorization error handler, which fails with a TypeError (a 500) on a
 * `client_id` without `redirect_uri` (oidc-provider 9: `oneRedirectUriClients` reads
 * `ctx.oidc.params`, unset on resume). Without the query an unknown resume is a 400 page.
 */
export const resumeGlue: Middleware = async (ctx, next) => {
  ctx.querystring = '';
  await next();
};

/**
 * Spec: "Missing, invalid or expired token: error invalid_token with HTTP 401." The provider
 * answers a missing or unparseable Authorization header with 400 invalid_request.
 */
export const userinfoGlue: Middleware = async (ctx, next) => {
  await next();
  const body = ctx.body as Partial<ErrorBody> | undefined;
  if (ctx.status === 400 && body?.error === 'invalid_request') {
    ctx.body = { error: 'invalid_token', error_description: body.error_description ?? 'invalid access token' };
    ctx.status = 401;
    // RFC 6750 §3: the challenge names the same error as the body.
    const challenge = ctx.response.get('WWW-Authenticate') || `Bearer realm="${ctx.origin}"`;
    ctx.set('WWW-Authenticate', challenge.replace('error="invalid_request"', 'error="invalid_token"'));
  }
};

/**
 * Introspection (RFC 7662 §2.2) of an active token names its user by `username`, the spec's
 * login name (the provider gives only `sub`), and always carries `token_type`: `Bearer` for
 * an access token (the provider's), `refresh_token` for a refresh token (the provider omits
 * it), so a resource server checking for `Bearer` never accepts a refresh token. A token whose
 * user no longer exists is inactive. A machine's token (client_credentials: its `sub` is the
 * client, RFC 9068 §2.2) names no user, and has no `username`.
 */
export const introspectGlue = (
  usernameOf: (accountId: string) => Promise<string | undefined>,
  /** RFC 7662's answer for one of the service's JWT access tokens presented by `clientId` (oidc/jwt-introspection.ts); undefined for any other token. */
  introspectJwt: (token: string, clientId: string) => Promise<Record<string, unknown> | undefined>,
): Middleware => async (ctx, next) => {
  await next();
  await introspectOwnJwt(ctx, introspectJwt);
  const body = ctx.body as Record<string, unknown> | undefined;
  if (ctx.status !== 200 || body?.active !== true || (body.sub !== undefined && body.sub === body.client_id)) return;
  const username = typeof body.sub === 'string' ? await usernameOf(body.sub) : undefined;
  if (username === undefined) {
    ctx.body = { active: false };
    return;
  }
  ctx.body = { ...body, username, token_type: body.token_type ?? 'refresh_token' };
};

/**
 * RFC 7662 §2.2 for an RFC 9068 access token (a resource's JWT, which is not stored): the
 * provider authenticated the client, then refused the token as `unsupported_token_type`; the
 * answer comes from the token itself and its grant (oidc/jwt-introspection.ts), with `aud`.
 */
async function introspectOwnJwt(ctx: Context, introspectJwt: (token: string, clientId: string) => Promise<Record<string, unknown> | undefined>) {
  const { oidc } = ctx as unknown as Partial<KoaContextWithOIDC>;
  const token = oidc?.params?.token;
  if (ctx.status !== 400 || (ctx.body as Partial<ErrorBody>)?.error !== 'unsupported_token_type' || !oidc?.client || typeof token !== 'string') return;
  const answer = await introspectJwt(token, oidc.client.clientId);
  if (!answer) return;
  ctx.status = 200;
  ctx.body = answer;
}
