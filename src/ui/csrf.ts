/**
 * CSRF protection for our HTML forms: a signed double-submit cookie. The form carries the
 * cookie's value in `_csrf`; a cross-site page can neither read the cookie nor forge its
 * signature. (JSON requests need no token: a cross-site page cannot send them without a CORS
 * preflight, and no answer here lets a page send credentials: http/responses.ts browserCors.)
 *
 * A token names the second it was issued and is accepted for {@link CSRF_LIFETIME_SECONDS}; a
 * page shown from a token past half its life gets a new one, so every form shown has at least
 * an hour to be sent. Every sign-in issues a new one ({@link renewCsrf}): a token seen or planted
 * before a sign-in (over http a sibling subdomain can set the `csrf` cookie) is worth nothing
 * after it.
 *
 * @see https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html#signed-double-submit-cookie-recommended
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { ServiceError } from '../errors.js';

export const CSRF_FIELD = '_csrf';

/** How long a token is accepted after it was issued. */
export const CSRF_LIFETIME_SECONDS = 2 * 60 * 60;

const cookieName = (ctx: Context) => (ctx.secure ? '__Host-csrf' : 'csrf');

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The browser's token and its age in seconds, if it has a well-formed one. */
function current(ctx: Context): { token: string; age: number } | undefined {
  const token = ctx.cookies.get(cookieName(ctx), { signed: true });
  const issued = Number(/^[\w-]{43}\.(\d{1,12})$/.exec(token ?? '')?.[1]);
  return token && Number.isSafeInteger(issued) ? { token, age: nowSeconds() - issued } : undefined;
}

/** Issues a new token (and its cookie) for this browser: at sign-in, and when the one it has is old. */
export function renewCsrf(ctx: Context): string {
  const token = `${randomBytes(32).toString('base64url')}.${nowSeconds()}`;
  ctx.cookies.set(cookieName(ctx), token, {
    signed: true, httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/', maxAge: CSRF_LIFETIME_SECONDS * 1000,
  });
  return token;
}

/** The token to put in a form, setting the cookie on first use (and once the one it has passed half its life). */
export function csrfToken(ctx: Context): string {
  const held = current(ctx);
  return held && held.age >= 0 && held.age < CSRF_LIFETIME_SECONDS / 2 ? held.token : renewCsrf(ctx);
}

/**
 * Throws 403 unless the submitted form carries this browser's token, unexpired. Compared as
 * bytes: `timingSafeEqual` needs two buffers of one length, and characters are not bytes.
 */
export function checkCsrf(ctx: Context): void {
  const held = current(ctx);
  const submitted = (ctx.request as { body?: Record<string, unknown> }).body?.[CSRF_FIELD];
  const expected = held && held.age < CSRF_LIFETIME_SECONDS ? Buffer.from(held.token) : undefined;
  const given = typeof submitted === 'string' ? Buffer.from(submitted) : undefined;
  const ok = expected !== undefined && given !== undefined && given.length === expected.length && timingSafeEqual(given, expected);
  if (!ok) {
    throw new ServiceError('invalid_request', 'This form has expired or did not come from this site. Go back, reload the page and try again.', 403);
  }
}
