/**
 * Headers every response carries. Pages refuse framing (clickjacking of login and consent),
 * load nothing but our own stylesheet, and leak no URL (codes travel in URLs) as a referrer.
 * No `form-action`: browsers apply it to the redirect that carries the code to the client.
 *
 * @see RFC 6749 §10.13 (clickjacking), RFC 9700 §4.2.4 (Referrer-Policy)
 */
import type { Middleware } from 'koa';

const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'";

export function securityHeaders(options: { hsts: boolean }): Middleware {
  return async (ctx, next) => {
    ctx.set({
      'Content-Security-Policy': CSP,
      'X-Frame-Options': 'DENY',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
    });
    if (options.hsts) ctx.set('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    await next();
  };
}
