/**
 * The token endpoint (RFC 6749 §3.2; spec "Token endpoint"), step by step, in the order a
 * request meets them; a step's work after `next()` happens on the way back:
 *
 * | step               | on the way in                                                  | on the way back                          |
 * |--------------------|----------------------------------------------------------------|------------------------------------------|
 * | `specErrors`       | —                                                              | a code's `invalid_grant` is the spec's `invalid_code`; a grant the client may not use is `unauthorized_client` |
 * | `spendBudgets`     | reads the form (at most 56 kB; `grant_type` defaults to authorization_code) and spends the address's and the client's budgets (client_id, or an assertion's `sub`) in one Redis round trip; 429 | — |
 * | `lookAhead`        | names the code or refresh token, read with the client in one statement | —                                |
 * | `requireFields`    | a missing code, refresh_token or client credential: `invalid_request` (a public client needs no secret; an assertion is a credential) | — |
 * | `machineScope`     | client_credentials for a resource without `scope` asks for every scope declared for it | —            |
 * | `settleWrites`     | —                                                              | the request's one write statement; a consume that lost its race is the provider's answer to a used code |
 * | the provider       | oidc-provider's token endpoint: client authentication, the grant, the tokens (deferred writes) | — |
 *
 * A body that is not a form spends the address budget alone and goes straight to the provider,
 * which refuses it.
 *
 * @example router.post(ROUTES.token, tokenEndpoint({ budgets, guard, provider: mount(provider), credentialOf, resourceScope, log }));
 */
import querystring from 'node:querystring';
import type { ParsedUrlQuery } from 'node:querystring';
import coBody from 'co-body';
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { decodeJwt } from 'jose';
import { errors } from 'oidc-provider';
import { basicCredentials } from '../clients/credentials.js';
import { canNameClient } from '../clients/metadata-document.js';
import { ServiceError } from '../errors.js';
import type { ErrorBody } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import { bodyParseError } from '../http/responses.js';
import type { TokenBudgets } from '../http/rate-limit.js';
import { currentState, settle } from '../store/request-state.js';
import type { StoreGuard } from '../store/store-failure.js';

/** The provider's own body limit (lib/shared/selective_body.js). */
const BODY_LIMIT = 56 * 1024;

type Form = ParsedUrlQuery & { grant_type: string };

/** The form `readForm` read, if the body was one. */
const formOf = (ctx: Context) => (ctx.request as { body?: Form }).body;

/** The provider's words for a grant type the client did not register (it answers `invalid_request`). */
const GRANT_NOT_ALLOWED = 'requested grant type is not allowed for this client';

/**
 * Spec "Errors": a code that is unknown, expired, used, foreign or fails PKCE is `invalid_code`,
 * which the provider calls `invalid_grant`; other grants (refresh tokens) keep `invalid_grant`.
 * RFC 6749 §5.2: an authenticated client using a grant type it may not use is `unauthorized_client`
 * (a public or metadata document's client asking for client_credentials, a machine client sending a code).
 */
const specErrors: Middleware = async (ctx, next) => {
  await next();
  const body = ctx.body as Partial<ErrorBody> | undefined;
  if (formOf(ctx)?.grant_type === 'authorization_code' && body?.error === 'invalid_grant') {
    ctx.body = { error: 'invalid_code', error_description: body.error_description ?? 'invalid authorization code' };
  }
  if (body?.error === 'invalid_request' && body.error_description === GRANT_NOT_ALLOWED) {
    ctx.body = { error: 'unauthorized_client', error_description: `the client may not use the ${String(formOf(ctx)?.grant_type)} grant: it did not register it, or cannot have it` };
  }
};

/** The client a client assertion names (RFC 7521 §4.2: its `sub`), read unverified: the provider verifies it. */
function assertedClient(form: Form): string | undefined {
  const { client_assertion: assertion } = form;
  if (typeof assertion !== 'string' || assertion === '') return undefined;
  try {
    const { sub } = decodeJwt(assertion);
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}

const FORM = 'application/x-www-form-urlencoded';

/** The form, parsed as the provider parses it (the provider then reads it from `ctx.request.body`). */
async function readForm(ctx: Context): Promise<Form> {
  let form: ParsedUrlQuery;
  try {
    // Node's querystring, as the provider parses (co-body's default, qs, would nest `a[b]` keys).
    form = await coBody.form(ctx, { limit: BODY_LIMIT, qs: { parse: (text: string) => querystring.parse(text) } } as coBody.Options);
  } catch (error) {
    if ((error as { status?: unknown }).status === 413) {
      ctx.set('Connection', 'close'); // the rest of the body stays unread: the connection cannot carry another request
      throw new ServiceError('invalid_request', 'request body is too large');
    }
    bodyParseError(error as Error, ctx);
  }
  form.grant_type ??= 'authorization_code';
  (ctx.request as { body?: unknown }).body = form;
  return form as Form;
}

/**
 * Spec "Limits": the token budgets, the address's and the client_id's, are spent together once
 * the form is read, before any lookup or secret check. An address refused until its window ends
 * is told so before its form is read; a body that is not a form, or one that fails before it
 * names a client (over the body limit, cut off), spends the address budget alone, and a spent one
 * answers 429 instead of the error. An id that cannot name a client has no budget to protect
 * (the address budget still applies); a named one is logged even when its authentication then
 * fails.
 */
const spendBudgets = (budgets: TokenBudgets): Middleware => async (ctx, next) => {
  if (!ctx.is(FORM)) return (await budgets.address(ctx)) ? next() : undefined;
  const spent = budgets.refusedHere(ctx) ? await budgets.address(ctx) : undefined;
  if (spent === false) return undefined;
  let form: Form;
  try {
    form = await readForm(ctx);
  } catch (error) {
    if (spent || await budgets.address(ctx)) throw error;
    return undefined;
  }
  const clientId = basicCredentials(ctx.get('authorization'))?.clientId ?? form.client_id ?? assertedClient(form);
  // An id we issued, or a metadata document's URL (its client is budgeted as any other).
  const budgeted = typeof clientId === 'string' && canNameClient(clientId) ? clientId : undefined;
  if (budgeted) noteClient(ctx, budgeted);
  if (await budgets.withClient(ctx, budgeted, spent)) return next();
  return undefined;
};

/**
 * Spec: `code`, `client_id` and `client_secret` are the token request. A missing field is
 * `invalid_request` (400), not a failed client authentication; a refresh (RFC 6749 §6) needs
 * `refresh_token` the same way. RFC 6749 §2.1, §3.2.1: a public client (RFC 7591 `none`, or a
 * metadata document's) sends its client_id and no secret, its PKCE code_verifier binding the code
 * to it (RFC 7636); a private_key_jwt client sends `client_assertion` instead of a secret. The
 * spec's form rule yields to other authentication: a request with HTTP Basic or a client
 * assertion (which names its client: RFC 7521 §4.2, so `client_id` may be left out) needs
 * neither field. Asked only of a form without a secret, after `lookAhead`, so the client is read
 * with the code or refresh token it names, which the provider reads next anyway.
 */
const requireFields = (credentialOf: TokenEndpointDependencies['credentialOf']): Middleware => async (ctx, next) => {
  const form = formOf(ctx);
  if (!form) return next();
  const { client_id: clientId, client_secret: secret } = form;
  const presented = ctx.get('authorization') !== '' || (typeof form.client_assertion === 'string' && form.client_assertion !== '');
  const credential = !presented && (secret === undefined || secret === '') && typeof clientId === 'string' && clientId !== '' ? await credentialOf(clientId) : 'secret';
  const required = [
    ...(form.grant_type === 'authorization_code' ? ['code'] : []),
    ...(form.grant_type === 'refresh_token' ? ['refresh_token'] : []),
    ...(presented ? [] : ['client_id', ...({ none: [], secret: ['client_secret'], assertion: ['client_assertion'] }[credential])]),
  ];
  const missing = required.filter((name) => form[name] === undefined || form[name] === '');
  if (missing.length > 0) {
    throw new ServiceError('invalid_request', `missing required parameter${missing.length > 1 ? 's' : ''} ${missing.map((m) => `'${m}'`).join(', ')}`);
  }
  return next();
};

/** The code (RFC 6749 §4.1.3) or refresh token (§6) the form names: store/hot-reads.ts reads it with the client. */
const lookAhead: Middleware = (ctx, next) => {
  const form = formOf(ctx);
  const state = currentState();
  if (form && state) {
    if (form.grant_type === 'authorization_code' && typeof form.code === 'string') state.lookAhead = { type: 'AuthorizationCode', id: form.code };
    if (form.grant_type === 'refresh_token' && typeof form.refresh_token === 'string') state.lookAhead = { type: 'RefreshToken', id: form.refresh_token };
  }
  return next();
};

/**
 * RFC 8707, as at authorize (spec-glue.ts): a client_credentials request for a resource without
 * `scope` asks for every scope declared for it. (Without a resource it is refused:
 * resource-indicators.ts.)
 */
const machineScope = (resourceScope: TokenEndpointDependencies['resourceScope']): Middleware => async (ctx, next) => {
  const form = formOf(ctx);
  if (form?.grant_type === 'client_credentials' && typeof form.resource === 'string' && (form.scope === undefined || form.scope === '')) {
    const declared = await resourceScope(form.resource);
    if (declared) form.scope = declared;
  }
  return next();
};

/**
 * The provider's writes (the consume, the tokens) and its events' (audit rows, outbox messages)
 * go out as one statement once it has answered, before the answer leaves: a consume that lost
 * its race wrote nothing and is answered as the provider answers a used code (400 invalid_grant).
 */
const settleWrites = (guard: StoreGuard, log: TokenEndpointDependencies['log']): Middleware => async (ctx, next) => {
  await next();
  try {
    await settle(ctx, guard, log);
  } catch (error) {
    if (!(error instanceof errors.InvalidGrant)) throw error;
    ctx.status = error.statusCode;
    ctx.body = { error: error.error, error_description: error.error_description };
  }
};

export interface TokenEndpointDependencies {
  /** The token request's budgets, by address and by client (http/rate-limit.ts); each answers its own 429. */
  budgets: TokenBudgets;
  /** The durable store's guard (a failure is a 503). */
  guard: StoreGuard;
  /** The provider, mounted. */
  provider: Middleware;
  /**
   * What `clientId` authenticates with: `none` (a public client: RFC 7591 `none`, or a metadata
   * document's, whose document is not fetched here), `assertion` (private_key_jwt), else `secret`.
   */
  credentialOf: (clientId: string) => Promise<'none' | 'secret' | 'assertion'>;
  /** The scopes declared for the resource server `indicator` names (space-separated), if it names one. */
  resourceScope: (indicator: string) => Promise<string | undefined>;
  /** A record that could not be written after an error answer (the answer stands). */
  log: (error: unknown, ctx: Context) => void;
}

export function tokenEndpoint({ budgets, guard, provider, credentialOf, resourceScope, log }: TokenEndpointDependencies): Middleware {
  return compose([specErrors, spendBudgets(budgets), lookAhead, requireFields(credentialOf), machineScope(resourceScope), settleWrites(guard, log), provider]);
}
