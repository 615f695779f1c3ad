/**
 * What every response carries, and how anything thrown becomes an answer:
 *
 * - {@link securityHeaders}: pages refuse framing (clickjacking of login and consent), load
 *   nothing but our own stylesheet, and leak no URL (codes travel in URLs) as a referrer. No
 *   `form-action`: browsers apply it to the redirect that carries the code to the client. Pages
 *   run no script, with one exception: the provider's `response_mode=form_post` page (OAuth 2.0
 *   Form Post Response Mode), whose one inline script posts the response to the client. The
 *   provider allows that script by its hash, added to a `script-src` it finds (oidc-provider's
 *   `script_src_sha`), so the policy names `script-src 'none'`, and the `'none'` is dropped where
 *   a hash joined it.
 * - {@link browserCors}: CORS for browser apps beside the provider's own. The provider answers
 *   CORS where it serves: discovery and the JWKS to any origin; the token, userinfo and
 *   revocation endpoints to a public client's redirect origins only (`clientBasedCORS`,
 *   oidc/provider.ts). Two answers come from us instead, and would otherwise reach a page as a
 *   bare network error: RFC 7591 registration (ui/register.ts), which any origin may use as anyone
 *   may, without credentials (no cookie goes along, so nothing to forge); and an error answered
 *   before a request reaches the provider (a rate limit, a form it cannot read, a store that is
 *   down). The provider lets any origin read the errors it answers before it knows the client; so
 *   do we, for these. An answer the provider's CORS saw (it always adds `Vary: Origin`) keeps its
 *   verdict: a refused origin stays refused.
 * - {@link requireScheme}: a request that did not come over BASE_URL's scheme (TLS, or a trusted
 *   proxy's first `X-Forwarded-Proto`) is refused, 400: an https service's Secure cookies cannot
 *   be set on it (it was a 500). After the health checks: a load balancer probes them over http.
 * - {@link publicCache}: how long a public document (discovery, the JWKS, …) may be kept.
 * - {@link handleErrors}: anything thrown below becomes the spec's `{error, error_description}`
 *   with its status, through one responder (JSON or page). Internals never reach a response: an
 *   unexpected error is logged and answered with a generic 500. A store that is down, hung or
 *   refusing is a 503 `temporarily_unavailable` with `Retry-After`, whoever answered it (our
 *   routes here, or the provider, which answers StoreUnavailableError itself).
 *
 * @see RFC 6749 §10.13 (clickjacking), RFC 9700 §4.2.4 (Referrer-Policy), https://fetch.spec.whatwg.org/#http-cors-protocol
 * @example koa.use(browserCors({ open, provider })).use(handleErrors(respond, log)).use(securityHeaders({ hsts, tokenPaths }));
 */
import type { Context, Middleware } from 'koa';
import { errors } from 'oidc-provider';
import { ServiceError, specErrorCode, specStatus, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../errors.js';
import type { ErrorBody, ErrorResponder } from '../errors.js';
import { asUnavailable } from '../store/store-failure.js';

const CSP = "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'";

/** `'none'` beside a hash the provider added: `'none'` must stand alone in a source list. */
const NONE_BESIDE_HASH = /script-src 'none' (?='sha256-)/;

/**
 * `tokenPaths`: where every answer, a 429 or a 405 included, also carries `Pragma: no-cache`
 * beside the `Cache-Control: no-store` its answers carry (RFC 6749 §5.1, for HTTP/1.0 caches).
 */
export function securityHeaders(options: { hsts: boolean; tokenPaths: ReadonlySet<string> }): Middleware {
  return async (ctx, next) => {
    ctx.set({
      'Content-Security-Policy': CSP,
      'X-Frame-Options': 'DENY',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
    });
    if (options.tokenPaths.has(ctx.path)) ctx.set('Pragma', 'no-cache');
    if (options.hsts) ctx.set('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    await next();
    const csp = ctx.response.get('Content-Security-Policy');
    if (csp !== CSP && NONE_BESIDE_HASH.test(csp)) ctx.set('Content-Security-Policy', csp.replace(NONE_BESIDE_HASH, 'script-src '));
  };
}

export function requireScheme(baseUrl: string): Middleware {
  const scheme = new URL(baseUrl).protocol.slice(0, -1);
  return (ctx, next) => {
    if (ctx.protocol !== scheme) throw new ServiceError('invalid_request', `This service is served at ${baseUrl} only: send requests over ${scheme}.`);
    return next();
  };
}

/**
 * `Cache-Control` on a public document (the provider sets none): how long a client or a cache in
 * front may keep its 200, put on its route (http/route-table.ts `maxAgeSeconds`). Safe to share
 * between clients because nothing in them depends on the request (http/access-log.ts
 * `publicOrigin`); the provider's CORS adds `Vary: Origin`.
 */
export function publicCache(maxAgeSeconds: number): Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.status === 200 && (ctx.method === 'GET' || ctx.method === 'HEAD')) ctx.set('Cache-Control', `public, max-age=${maxAgeSeconds}`);
  };
}

/** Fixed words for client errors raised by body parsers, whose messages may echo internals. */
const CLIENT_ERRORS: Record<number, string> = {
  400: 'the request body is malformed',
  405: 'method not allowed',
  413: 'the request body is too large',
  415: 'unsupported request content type or charset',
};

function toWire(thrown: unknown): { body: ErrorBody; status: number } | undefined {
  if (thrown instanceof ServiceError) return { body: thrown.body, status: thrown.status };
  const error = asUnavailable(undefined, thrown);
  if (error instanceof errors.OIDCProviderError) {
    return { body: { error: specErrorCode(error.error), error_description: error.error_description ?? error.message }, status: error.statusCode };
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // A body of the wrong type or size is the spec's `invalid_request`, with its 400 (a parser
    // would say 415 or 413); 405 keeps its status.
    return { body: { error: 'invalid_request', error_description: CLIENT_ERRORS[status] ?? 'bad request' }, status: status === 405 ? 405 : specStatus('invalid_request', status) };
  }
  return undefined;
}

/**
 * How parseBody (http/body.ts) fails: a parser error keeps its status (400, 413, 415 above); one without a
 * status is a body that does not decode (a `Content-Encoding: gzip` or `deflate` that is not,
 * failing in zlib), the client's malformed body too, not a 500. So is a body that can no
 * longer be read because the client's connection is gone (say Node's parser refused its
 * chunked encoding and answered 400 while the handler was still waiting on a store): raw-body
 * calls that a 500 `stream.not.readable`, which would log an error that is not ours.
 */
export function bodyParseError(error: Error, ctx: Context): never {
  const { status, type } = error as { status?: unknown; type?: unknown };
  if (type === 'stream.not.readable' && (ctx.req.destroyed || ctx.req.socket?.destroyed)) {
    throw new ServiceError('invalid_request', 'the request was cut off before its body was read');
  }
  if (typeof status === 'number') throw error;
  throw new ServiceError('invalid_request', CLIENT_ERRORS[400]!);
}

export function handleErrors(respond: ErrorResponder, log: (error: unknown, ctx: Context) => void): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null) {
        respond(ctx, { error: 'not_found', error_description: `nothing is served at ${ctx.method} ${ctx.path}` }, 404);
      }
    } catch (error) {
      const wire = toWire(error);
      if (!wire) log(error, ctx);
      const { body, status } = wire ?? {
        body: { error: 'server_error', error_description: 'the service could not complete the request' },
        status: 500,
      };
      // What failed may have set a redirect before it did (the provider saves the session after
      // the authorization endpoint answered): an error answer leads nowhere (RFC 9110 §10.2.2).
      ctx.remove('Location');
      respond(ctx, body, status);
    }
    // RFC 9110 §10.2.3: a 503 says when to come back (the provider's own answers included).
    if (ctx.status === 503 && !ctx.response.get('Retry-After')) ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
  };
}

/** How long a browser may keep a preflight's answer (the provider's own figure). */
const PREFLIGHT_MAX_AGE_SECONDS = 3600;

export interface BrowserCorsOptions {
  /** Paths open to any origin, and the methods a page may use there: their preflight is answered here, their answers readable. */
  open: ReadonlyMap<string, readonly string[]>;
  /** Paths whose CORS the provider answers: only errors it never saw are made readable here. */
  provider: readonly string[];
}

function allowOrigin(ctx: Context, origin: string) {
  ctx.vary('Origin');
  ctx.set('Access-Control-Allow-Origin', origin);
  ctx.set('Access-Control-Expose-Headers', 'WWW-Authenticate, Retry-After');
}

export function browserCors({ open, provider }: BrowserCorsOptions): Middleware {
  const providers = new Set(provider);
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (!origin || origin === 'null') return next();
    const openMethods = open.get(ctx.path);
    if (openMethods) {
      const requested = ctx.get('Access-Control-Request-Method');
      if (ctx.method === 'OPTIONS' && requested) {
        allowOrigin(ctx, origin);
        ctx.set('Access-Control-Allow-Methods', openMethods.join(', '));
        const headers = ctx.get('Access-Control-Request-Headers');
        if (headers) ctx.set('Access-Control-Allow-Headers', headers);
        ctx.set('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS));
        ctx.status = 204;
        return;
      }
      await next();
      if (openMethods.includes(ctx.method)) allowOrigin(ctx, origin);
      return;
    }
    await next();
    if (providers.has(ctx.path) && ctx.status >= 400 && !/\borigin\b/i.test(ctx.response.get('Vary'))) allowOrigin(ctx, origin);
  };
}
