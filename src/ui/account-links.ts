/**
 * The pages of mailed links (docs/accounts.md):
 *
 * | path                          | GET                                         | POST                                            |
 * |-------------------------------|---------------------------------------------|-------------------------------------------------|
 * | `/api/forgot-password.php`    | a form asking for the address               | queues a reset mail; the same answer for every address |
 * | `/api/reset-password.php`     | `?token=`: a form for the new password (the link is not used yet) | uses the link, sets the password |
 * | `/api/verify-email.php`       | `?token=`: uses the link, the address is verified | —                                         |
 *
 * A reset request does nothing here that depends on the address: it is queued as typed, and the
 * mail worker finds out whether it names anyone (mail/mail-outbox.ts). So the answer and its
 * timing are the same whether or not it does. Budgets: requests by client address (over it: 429),
 * and by address typed (over it: the same answer, nothing queued); the worker counts reset mails
 * by account. A refused link (forged, used, expired) gets one page, whatever the reason; the
 * audit trail keeps the reason. Without mail (`off`), both say plainly that mail is off.
 */
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { UserInputError } from '../accounts/user-store.js';
import type { UserStore } from '../accounts/user-store.js';
import { ANONYMOUS, userActor } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';
import type { MailMode } from '../config/mail.js';
import { clientKey } from '../http/client-address.js';
import { RESET_PATH, VERIFY_PATH } from '../mail/messages.js';
import type { Limiter } from '../store/limiter.js';
import { retryAfterSeconds } from '../store/limiter.js';
import { checkCsrf, csrfToken } from './csrf.js';
import { field } from './form.js';
import type { SelfService } from './self-service.js';
import { waitText } from './sign-in.js';
import type { Views } from './views.js';

export const FORGOT_PATH = '/api/forgot-password.php';
export { RESET_PATH, VERIFY_PATH };

const ACCOUNT_PAGE = '/api/applications.php';

export interface AccountLinkDependencies {
  self: SelfService;
  users: Pick<UserStore, 'hashNewPassword'>;
  mailMode: MailMode;
  /** Reset requests by client address (429 over it) and by the address typed (over it: nothing queued, the same answer). */
  resetsByClient: Limiter;
  resetsByEmail: Limiter;
  views: Views;
  body: Middleware;
}

/** The answer where a mail would be sent and mail is off: plain words, 503. */
export function mailOff(ctx: Context, views: Views) {
  views.respond(ctx, 'notice', {
    title: 'Mail is off', noticeId: 'mail_off',
    text: 'This service sends no mail: it has no SMTP server configured (SMTP_URL). Password reset and address verification by mail are off. Ask the service\'s operator.',
  }, 503);
}

const BAD_LINK = 'This link does not work: it was used already, it expired, or it is not one we sent. Ask for a new one.';
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;

/** The three pages' methods, by the names the route table gives them (http/route-table.ts). */
export function accountLinkRoutes(deps: AccountLinkDependencies): { forgotPassword: { GET: Middleware; POST: Middleware }; resetPassword: { GET: Middleware; POST: Middleware }; verifyEmail: { GET: Middleware } } {
  const notice = (ctx: Context, noticeId: string, title: string, text: string, status: number, link?: { href: string; label: string }) =>
    deps.views.respond(ctx, 'notice', { title, noticeId, text, link }, status);
  const badLink = (ctx: Context, again: boolean) =>
    notice(ctx, 'bad_link', 'This link does not work', BAD_LINK, 400, again ? { href: FORGOT_PATH, label: 'Mail me a new link' } : { href: ACCOUNT_PAGE, label: 'Your account' });
  const forgotPage = (ctx: Context, locals: { email?: string; error?: string } = {}, status = 200) =>
    deps.views.respond(ctx, 'forgot-password', { title: 'Forgot your password?', csrf: csrfToken(ctx), path: FORGOT_PATH, email: '', ...locals }, status);
  const noStore: Middleware = async (ctx, next) => { ctx.set('Cache-Control', 'no-store'); await next(); };

  const forgotGet = compose<Context>([noStore, (ctx) => (deps.mailMode === 'off' ? mailOff(ctx, deps.views) : forgotPage(ctx))]);

  const forgotPost = compose<Context>([noStore, deps.body, async (ctx) => {
    checkCsrf(ctx);
    if (deps.mailMode === 'off') return mailOff(ctx, deps.views);
    const email = field(ctx, 'email').trim();
    if (email.length > 254 || !EMAIL.test(email)) return forgotPage(ctx, { email, error: 'Type an e-mail address, such as alice@example.com.' }, 400);
    const byClient = await deps.resetsByClient.consume(clientKey(ctx));
    if (byClient.exceeded) {
      const wait = retryAfterSeconds(byClient.resetMs);
      ctx.set('Retry-After', String(wait));
      return forgotPage(ctx, { email, error: `Too many reset requests from your network. Try again in ${waitText(wait)}.` }, 429);
    }
    // Over the address's budget: nothing queued, and the same answer (no hint of whom it names).
    const byEmail = await deps.resetsByEmail.consume(email.toLowerCase());
    if (!byEmail.exceeded) await deps.self.requestReset(email, requestContext(ctx, ANONYMOUS));
    notice(ctx, 'reset_requested', 'Check your mail',
      'If an account uses that address, a mail with a link to choose a new password is on its way. The link works once, for a short while.', 200);
  }]);

  const resetGet = compose<Context>([noStore, async (ctx) => {
    if (deps.mailMode === 'off') return mailOff(ctx, deps.views);
    const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
    const check = await deps.self.checkReset(token);
    if ('refused' in check) {
      await deps.self.refused(check, 'password_reset', requestContext(ctx, ANONYMOUS));
      return badLink(ctx, true);
    }
    deps.views.respond(ctx, 'reset-password', { title: 'Choose a new password', csrf: csrfToken(ctx), path: RESET_PATH, token });
  }]);

  const resetPost = compose<Context>([noStore, deps.body, async (ctx) => {
    checkCsrf(ctx);
    if (deps.mailMode === 'off') return mailOff(ctx, deps.views);
    const token = field(ctx, 'token');
    const page = (error: string, status: number) => deps.views.respond(ctx, 'reset-password', { title: 'Choose a new password', csrf: csrfToken(ctx), path: RESET_PATH, token, error }, status);
    // The link first (cheap): no argon2 work for a link that opens nothing.
    const check = await deps.self.checkReset(token);
    if ('refused' in check) {
      await deps.self.refused(check, 'password_reset', requestContext(ctx, ANONYMOUS));
      return badLink(ctx, true);
    }
    const password = field(ctx, 'new_password');
    if (password !== field(ctx, 'new_password_again')) return page('The two passwords differ. Nothing was changed.', 400);
    let hash: string;
    try {
      hash = await deps.users.hashNewPassword(password);
    } catch (error) {
      if (error instanceof UserInputError) return page(`New password: ${error.message}. Nothing was changed.`, 400);
      throw error;
    }
    const used = await deps.self.completeReset(token, hash, requestContext(ctx, userActor(check.userId)));
    if ('refused' in used) {
      await deps.self.refused(used, 'password_reset', requestContext(ctx, ANONYMOUS));
      return badLink(ctx, true);
    }
    notice(ctx, 'password_reset', 'Password changed', 'Your new password is set, and you are signed out everywhere. Sign in with the new password.', 200, { href: ACCOUNT_PAGE, label: 'Sign in' });
  }]);

  const verifyGet = compose<Context>([noStore, async (ctx) => {
    if (deps.mailMode === 'off') return mailOff(ctx, deps.views);
    const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
    const used = await deps.self.verifyEmail(token, requestContext(ctx, ANONYMOUS));
    if ('refused' in used) {
      await deps.self.refused(used, 'email_verification', requestContext(ctx, ANONYMOUS));
      return badLink(ctx, false);
    }
    notice(ctx, 'email_verified', 'Address verified', 'Your e-mail address is verified. Applications you sign in to are told so (email_verified).', 200, { href: ACCOUNT_PAGE, label: 'Your account' });
  }]);

  return { forgotPassword: { GET: forgotGet, POST: forgotPost }, resetPassword: { GET: resetGet, POST: resetPost }, verifyEmail: { GET: verifyGet } };
}
