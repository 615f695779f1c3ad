/**
 * The only place where requests are reshaped for oidc-provider. Each rule names the spec line
 * it serves; everything else is the provider's own behaviour at the spec's paths.
 *
 * @see ../shared/spec/oauth-service-spec.md "Endpoints", "Errors"
 */
import querystring from 'node:querystring';
import type { Context, Middleware, Next } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { basicCredentials } from '../clients/client-auth.js';
import { canNameClient } from '../clients/metadata-document.js';
import { ServiceError, StoreUnavailableError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import type { ErrorBody, ErrorResponder } from '../errors.js';
import { asUnavailable } from '../store/store-failure.js';
import { ROUTES } from './routes.js';

/** The provider's own body limit (lib/shared/selective_body.js). */
const BODY_LIMIT = 56 * 1024;

export interface GlueDependencies {
  /** Answers an authorization error that must not be redirected to an untrusted redirect_uri. */
  answerUntrusted: ErrorResponder;
  /** Spends a token request's budgets (its address, and its client_id if it names one); false when it has answered 429. */
  admitClient: (ctx: Context, clientId: string | undefined) => Promise<boolean>;
  /** The login name of an account (introspection reports it), undefined if there is none. */
  usernameOf: (accountId: string) => Promise<string | undefined>;
  /** The scopes declared for the resource server `indicator` names (space-separated), if it names one. */
  resourceScope: (indicator: string) => Promise<string | undefined>;
  /** Whether `clientId` names a public client (token_endpoint_auth_method none: no secret). */
  isPublicClient: (clientId: string) => Promise<boolean>;
  /** RFC 7662's answer for one of the service's JWT access tokens presented by `clientId` (oidc/jwt-introspection.ts); undefined for any other token. */
  introspectJwt: (token: string, clientId: string) => Promise<Record<string, unknown> | undefined>;
}

export function specGlue(deps: GlueDependencies): Middleware {
  return async (ctx, next) => {
    if (ctx.path === ROUTES.authorization && (ctx.method === 'GET' || ctx.method === 'HEAD')) return authorize(ctx, next, deps);
    if (ctx.path === ROUTES.token && ctx.method === 'POST') return token(ctx, next, deps);
    if (ctx.path === ROUTES.userinfo) return userinfo(ctx, next);
    if (ctx.path === ROUTES.introspection && ctx.method === 'POST') return introspect(ctx, next, deps);
    if (ctx.path.startsWith(`${ROUTES.authorization}/`)) return resume(ctx, next);
    return next();
  };
}

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
async function authorize(ctx: Context, next: Next, deps: GlueDependencies) {
  const { client_id: clientId, redirect_uri: redirectUri, scope, response_mode: responseMode } = ctx.query;
  const refuse = (description: string) => deps.answerUntrusted(ctx, { error: 'invalid_request', error_description: description }, 400);
  if (typeof clientId === 'string' && clientId !== '' && !canNameClient(clientId)) {
    return refuse('client_id is malformed');
  }
  if (redirectUri === undefined || redirectUri === '') return refuse("missing required parameter 'redirect_uri'");
  if (ctx.query.resource !== undefined) {
    // RFC 8707: a request for a resource server's token asks for that server's scopes, not for
    // the profile's `openid`; one without `scope` asks for every scope declared for it.
    const declared = scope === undefined && typeof ctx.query.resource === 'string' ? await deps.resourceScope(ctx.query.resource) : undefined;
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
}

/**
 * Issue 10 / RFC 6749 §4.1.2.1: a store that fails once the provider has redirected to the client
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

/** Errors the provider sends back to the client without an `error_description` (README "Errors": every error has one). */
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
async function resume(ctx: Context, next: Next) {
  ctx.querystring = '';
  await next();
}

async function readBody(ctx: Context): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) {
      // The rest of the body stays unread: the connection cannot carry another request.
      ctx.set('Connection', 'close');
      throw new ServiceError('invalid_request', 'request body is too large');
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Spec: `code`, `client_id` and `client_secret` are the token request; grant_type defaults to
 * authorization_code. A missing field is `invalid_request` (400), not a failed client
 * authentication; a refresh (RFC 6749 §6) needs `refresh_token` the same way. A code that is
 * unknown, expired, used, foreign or fails PKCE is the spec's `invalid_code`, which the
 * provider calls `invalid_grant`; other grants (refresh tokens) keep `invalid_grant`.
 *
 * The provider reads the body we parsed here (it warns once that a body was parsed upstream).
 */
async function token(ctx: Context, next: Next, deps: GlueDependencies) {
  if (!ctx.is('application/x-www-form-urlencoded')) return next(); // the provider refuses it
  const params = querystring.parse(await readBody(ctx));
  // Spec "Limits": the token budget per client_id, spent before any lookup or secret check. An
  // id that cannot name a client has no budget to protect (the address budget still applies).
  const clientId = basicCredentials(ctx.get('authorization'))?.clientId ?? params.client_id;
  const budgeted = typeof clientId === 'string' && canNameClient(clientId) ? clientId : undefined;
  if (budgeted) noteClient(ctx, budgeted); // logged even when its authentication fails
  if (!(await deps.admitClient(ctx, budgeted))) return;
  params.grant_type ??= 'authorization_code';
  (ctx.request as { body?: unknown }).body = params; // before any client lookup: its look-ahead reads the form
  const basic = ctx.get('authorization') !== '';
  const required = [
    ...(params.grant_type === 'authorization_code' ? ['code'] : []),
    ...(params.grant_type === 'refresh_token' ? ['refresh_token'] : []),
    ...(basic ? [] : ['client_id', ...(await publicWithoutSecret(params, deps) ? [] : ['client_secret'])]),
  ];
  const missing = required.filter((name) => params[name] === undefined || params[name] === '');
  if (missing.length > 0) {
    throw new ServiceError('invalid_request', `missing required parameter${missing.length > 1 ? 's' : ''} ${missing.map((m) => `'${m}'`).join(', ')}`);
  }
  await next();
  const body = ctx.body as Partial<ErrorBody> | undefined;
  if (params.grant_type === 'authorization_code' && body?.error === 'invalid_grant') {
    ctx.body = { error: 'invalid_code', error_description: body.error_description ?? 'invalid authorization code' };
  }
}

/**
 * RFC 6749 §2.1, §3.2.1: a public client sends its client_id and no secret (its PKCE
 * code_verifier binds the code to it, RFC 7636). Asked only of a form without a secret; the
 * client is read with the code or refresh token the form names (store/hot-reads.ts), which the
 * provider reads next anyway.
 */
async function publicWithoutSecret(params: querystring.ParsedUrlQuery, deps: GlueDependencies): Promise<boolean> {
  const { client_id: clientId, client_secret: secret } = params;
  return (secret === undefined || secret === '') && typeof clientId === 'string' && clientId !== '' && deps.isPublicClient(clientId);
}

/**
 * Spec: "Missing, invalid or expired token: error invalid_token with HTTP 401." The provider
 * answers a missing or unparseable Authorization header with 400 invalid_request.
 */
async function userinfo(ctx: Context, next: Next) {
  await next();
  const body = ctx.body as Partial<ErrorBody> | undefined;
  if (ctx.status === 400 && body?.error === 'invalid_request') {
    ctx.body = { error: 'invalid_token', error_description: body.error_description ?? 'invalid access token' };
    ctx.status = 401;
    // RFC 6750 §3: the challenge names the same error as the body.
    const challenge = ctx.response.get('WWW-Authenticate') || `Bearer realm="${ctx.origin}"`;
    ctx.set('WWW-Authenticate', challenge.replace('error="invalid_request"', 'error="invalid_token"'));
  }
}

/**
 * Introspection (RFC 7662 §2.2) of an active token names its user by `username`, the spec's
 * login name (the provider gives only `sub`), and always carries `token_type`: `Bearer` for
 * an access token (the provider's), `refresh_token` for a refresh token (the provider omits
 * it), so a resource server checking for `Bearer` never accepts a refresh token. A token whose
 * user no longer exists is inactive.
 */
async function introspect(ctx: Context, next: Next, deps: GlueDependencies) {
  await next();
  await introspectJwt(ctx, deps);
  const body = ctx.body as Record<string, unknown> | undefined;
  if (ctx.status !== 200 || body?.active !== true) return;
  const username = typeof body.sub === 'string' ? await deps.usernameOf(body.sub) : undefined;
  if (username === undefined) {
    ctx.body = { active: false };
    return;
  }
  ctx.body = { ...body, username, token_type: body.token_type ?? 'refresh_token' };
}

/**
 * RFC 7662 §2.2 for an RFC 9068 access token (a resource's JWT, which is not stored): the
 * provider authenticated the client, then refused the token as `unsupported_token_type`; the
 * answer comes from the token itself and its grant (oidc/jwt-introspection.ts), with `aud`.
 */
async function introspectJwt(ctx: Context, deps: GlueDependencies) {
  const { oidc } = ctx as unknown as Partial<KoaContextWithOIDC>;
  const token = oidc?.params?.token;
  if (ctx.status !== 400 || (ctx.body as Partial<ErrorBody>)?.error !== 'unsupported_token_type' || !oidc?.client || typeof token !== 'string') return;
  const answer = await deps.introspectJwt(token, oidc.client.clientId);
  if (!answer) return;
  ctx.status = 200;
  ctx.body = answer;
}
