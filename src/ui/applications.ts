/**
 * `/api/applications.php`, the user's account page: a signed-in user changes their password,
 * asks for a mail to verify their address, signs out everywhere, and sees the applications they
 * have authorized (name, access, since when) and revokes one. Every form posts to this one path
 * with an `action` (`sign_in`, `change_password`, `verify_email`, `sign_out_everywhere`,
 * `revoke`, `sign_out`) and the CSRF token; those that change the account name the user the page
 * showed (`for_user`). What each does: ui/self-service.ts; docs/accounts.md.
 *
 * Signed in means either the provider's login session (the user signed in while authorizing
 * an application in this browser) or this page's own sign-in: a signed cookie naming the
 * account, bound to this path, ending after {@link PAGE_SESSION_SECONDS}.
 */
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { ServiceError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import { isActive, sessionEnded } from '../accounts/provider-account.js';
import type { User } from '../accounts/user-store.js';
import type { AuthorizedApps } from '../oidc/authorized-apps.js';
import type { LoginSessions } from '../oidc/login-session.js';
import { checkCsrf, csrfToken } from './csrf.js';
import { field } from './form.js';
import { signIn, waitText } from './sign-in.js';
import type { SignInDependencies } from './sign-in.js';
import type { Views } from './views.js';
import { userActor } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';
import { UserInputError } from '../accounts/user-store.js';
import type { MailMode } from '../config/mail.js';
import type { Limiter } from '../store/limiter.js';
import { retryAfterSeconds } from '../store/limiter.js';
import type { SelfService } from './self-service.js';
import { mailOff } from './account-links.js';

export const APPLICATIONS_PATH = '/api/applications.php';

/** Lifetime of the page's own sign-in (absolute): long enough to review and revoke. */
export const PAGE_SESSION_SECONDS = 10 * 60;

/** The forms that act on the signed-in user's account (all but sign_in and sign_out). */
const ACCOUNT_ACTIONS = new Set(['change_password', 'sign_out_everywhere', 'verify_email', 'revoke']);

export interface ApplicationsDependencies {
  apps: AuthorizedApps;
  findUser: (id: string) => Promise<User | null>;
  /** The page's password check, behind the same brute-force guard as the login page, audited alike. */
  signIn: SignInDependencies;
  loginSessions: LoginSessions;
  views: Views;
  body: Middleware;
  self: SelfService;
  mailMode: MailMode;
  /** Verification mails a user may ask for (keyed by user id). */
  verificationsByAccount: Limiter;
}

const SCOPE_LABELS: Record<string, string> = {
  openid: 'your username, e-mail address and full name',
  profile: 'your name',
  email: 'your e-mail address',
};

/** The page's GET and POST; its path and what else it answers: http/route-table.ts. */
export function applicationsRoutes(deps: ApplicationsDependencies): { GET: Middleware; POST: Middleware } {
  const cookieName = 'applications_session';
  const cookieOptions = (ctx: Context) => ({
    signed: true, httpOnly: true, sameSite: 'strict', secure: ctx.secure, path: APPLICATIONS_PATH,
  } as const);

  async function signedInUser(ctx: Context): Promise<User | undefined> {
    const [accountId, expires] = (ctx.cookies.get(cookieName, { signed: true }) ?? '').split('~');
    const own = accountId && Number(expires) > Date.now() / 1000 ? { accountId, signedInAt: Number(expires) - PAGE_SESSION_SECONDS } : undefined;
    const session = own ?? await deps.loginSessions.signedIn(ctx);
    const user = session ? await deps.findUser(session.accountId) : null;
    // A disabled user is signed out everywhere, and so is one whose sessions an operator ended.
    return user && isActive(user) && !sessionEnded(user, session!.signedInAt) ? user : undefined;
  }

  /** The page's own sign-in, from `signedInAt` (epoch seconds) for {@link PAGE_SESSION_SECONDS}. */
  function keepSignedIn(ctx: Context, user: User, signedInAt: number) {
    ctx.cookies.set(cookieName, `${user.id}~${signedInAt + PAGE_SESSION_SECONDS}`, cookieOptions(ctx));
  }

  function signInPage(ctx: Context, locals: { username?: string; error?: string; notice?: string } = {}, status = 200) {
    deps.views.respond(ctx, 'applications-sign-in', { title: 'Sign in', csrf: csrfToken(ctx), path: APPLICATIONS_PATH, username: '', ...locals }, status);
  }

  const NOTICES: Record<string, string> = {
    password: 'Password changed. Every other browser and application signed in as you must sign in again.',
    verify: 'A mail with a link to verify your address is on its way. The link works once.',
    signed_out: 'Signed out everywhere.',
  };

  async function accountPage(ctx: Context, user: User, locals: { notice?: string; error?: string } = {}, status = 200) {
    const apps = (await deps.apps.list(user.id)).map((app) => ({
      ...app,
      access: app.scopes.map((scope) => SCOPE_LABELS[scope] ?? scope),
      since: app.authorizedAt.toISOString(),
      sinceLabel: app.authorizedAt.toUTCString(),
    }));
    const done = typeof ctx.query.done === 'string' ? NOTICES[ctx.query.done] : undefined;
    deps.views.respond(ctx, 'applications', {
      title: 'Your account', csrf: csrfToken(ctx), path: APPLICATIONS_PATH, username: user.username, userId: user.id, email: user.email,
      emailVerified: user.emailVerified, apps, revoked: ctx.query.revoked === '1', notice: done, ...locals,
    }, status);
  }

  const get: Middleware = async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const user = await signedInUser(ctx);
    if (!user) return signInPage(ctx, ctx.query.done === 'signed_out' ? { notice: NOTICES.signed_out! } : {});
    await accountPage(ctx, user);
  };

  const post = compose<Context>([deps.body, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    checkCsrf(ctx);
    const action = field(ctx, 'action');
    if (action === 'sign_in') {
      const username = field(ctx, 'username');
      const outcome = await signIn(ctx, deps.signIn, { page: 'applications' }, username, field(ctx, 'password'));
      if (!outcome.user) return signInPage(ctx, { username, error: outcome.error }, outcome.status);
      keepSignedIn(ctx, outcome.user, Math.floor(Date.now() / 1000));
      return seeOther(ctx, APPLICATIONS_PATH);
    }
    if (action === 'sign_out') {
      ctx.cookies.set(cookieName, null, cookieOptions(ctx));
      await deps.loginSessions.end(ctx);
      return seeOther(ctx, APPLICATIONS_PATH);
    }
    if (!ACCOUNT_ACTIONS.has(action)) throw new ServiceError('invalid_request', 'Unknown action. Go back, reload the page and try again.');
    const user = await signedInUser(ctx);
    if (!user) return signInPage(ctx, { error: 'Your sign-in has ended. Sign in again, then try again.' }, 401);
    // The form names the user its page showed: a tab left open while this browser signed in as
    // someone else since must not change that other person's account.
    const shown = field(ctx, 'for_user');
    if (shown !== '' && shown !== user.id) {
      throw new ServiceError('invalid_request', `This page was for another account; this browser has signed in as ${user.username} since. Nothing was ${action === 'revoke' ? 'revoked' : 'changed'}: reload the page.`, 409);
    }
    const context = requestContext(ctx, userActor(user.id));
    if (action === 'change_password') {
      const next = field(ctx, 'new_password');
      if (next !== field(ctx, 'new_password_again')) return accountPage(ctx, user, { error: 'The two new passwords differ. Nothing was changed.' }, 400);
      // The current password, behind the login guard: its delays and ceilings, its audit rows.
      const checked = await signIn(ctx, deps.signIn, { page: 'account' }, user.username, field(ctx, 'current_password'));
      if (!checked.user) return accountPage(ctx, user, { error: `Current password: ${checked.error} Nothing was changed.` }, checked.status);
      let at: Date;
      try {
        ({ at } = await deps.self.changePassword(user, next, context));
      } catch (error) {
        if (error instanceof UserInputError) return accountPage(ctx, user, { error: `New password: ${error.message}. Nothing was changed.` }, 400);
        throw error;
      }
      // Every session up to `at` is over, this one's too: this browser signs in again just after.
      keepSignedIn(ctx, user, Math.floor(at.getTime() / 1000) + 1);
      return seeOther(ctx, `${APPLICATIONS_PATH}?done=password`);
    }
    if (action === 'sign_out_everywhere') {
      await deps.self.signOutEverywhere(user, context);
      ctx.cookies.set(cookieName, null, cookieOptions(ctx));
      await deps.loginSessions.end(ctx);
      return seeOther(ctx, `${APPLICATIONS_PATH}?done=signed_out`);
    }
    if (action === 'verify_email') {
      if (user.emailVerified) return seeOther(ctx, APPLICATIONS_PATH);
      if (deps.mailMode === 'off') return mailOff(ctx, deps.views);
      const budget = await deps.verificationsByAccount.consume(user.id);
      if (budget.exceeded) {
        ctx.set('Retry-After', String(retryAfterSeconds(budget.resetMs)));
        return accountPage(ctx, user, { error: `Several verification mails were sent already. Try again in ${waitText(retryAfterSeconds(budget.resetMs))}.` }, 429);
      }
      await deps.self.requestVerification(user, context);
      return seeOther(ctx, `${APPLICATIONS_PATH}?done=verify`);
    }
    const clientId = field(ctx, 'client_id');
    if (clientId === '') throw new ServiceError('invalid_request', 'No application was chosen.');
    const grantIds = await deps.apps.revoke(user.id, clientId, context);
    if (grantIds.length > 0) noteClient(ctx, clientId);
    if (grantIds.length === 0) {
      throw new ServiceError('not_found', 'That application has no access to your account (it may have been revoked already).');
    }
    return seeOther(ctx, `${APPLICATIONS_PATH}?revoked=1`);
  }]);

  return { GET: get, POST: post };
}

function seeOther(ctx: Context, location: string) {
  ctx.status = 303;
  ctx.redirect(location);
}
