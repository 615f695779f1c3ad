/**
 * Headers every response carries. Pages refuse framing (clickjacking of login and consent),
 * load nothing but our own stylesheet, and leak no URL (codes travel in URLs) as a referrer.
 * No `form-action`: browsers apply it to the redirect that carries the code to the client.
 *
 * Pages run no script, with one exception: the provider's `response_mode=form_post` page
 * (OAuth 2.0 Form Post Response Mode), whose one inline script posts the response to the
 * client. The provider allows that script by its hash, added to a `script-src` it finds
 * (oidc-provider's `script_src_sha`), so the policy names `script-src 'none'`, and the `'none'`
 * is dropped where a hash joined it.
 *
 * @see RFC 6749 §10.13 (clickjacking), RFC 9700 §4.2.4 (Referrer-Policy)
 */
import type { Middleware } from 'koa';

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
