/**
 * CSRF protection for our HTML forms: a signed double-submit cookie. The form carries the
 * cookie's value in `_csrf`; a cross-site page can neither read the cookie nor forge its
 * signature. (JSON requests need no token: a cross-site page cannot send them without a CORS
 * preflight, and no answer here lets a page send credentials: http/responses.ts browserCors.)
 *
 * @see https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html#signed-double-submit-cookie-recommended
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { ServiceError } from '../errors.js';

export const CSRF_FIELD = '_csrf';

const cookieName = (ctx: Context) => (ctx.secure ? '__Host-csrf' : 'csrf');

/** The token to put in a form, setting the cookie on first use. */
export function csrfToken(ctx: Context): string {
  const existing = ctx.cookies.get(cookieName(ctx), { signed: true });
  if (existing) return existing;
  const token = randomBytes(32).toString('base64url');
  ctx.cookies.set(cookieName(ctx), token, { signed: true, httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/' });
  return token;
}

/** Throws 403 unless the submitted form carries this browser's token. */
export function checkCsrf(ctx: Context): void {
  const expected = ctx.cookies.get(cookieName(ctx), { signed: true });
  const submitted = (ctx.request as { body?: Record<string, unknown> }).body?.[CSRF_FIELD];
  const ok = expected !== undefined && typeof submitted === 'string'
    && submitted.length === expected.length
    && timingSafeEqual(Buffer.from(submitted), Buffer.from(expected));
  if (!ok) {
    throw new ServiceError('invalid_request', 'This form has expired or did not come from this site. Go back, reload the page and try again.', 403);
  }
}
