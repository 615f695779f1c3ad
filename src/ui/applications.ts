/**
 * `/api/applications.php`: a signed-in user sees the applications they have authorized
 * (name, access, since when) and revokes one. Every form posts to this one path with an
 * `action` (`sign_in`, `revoke`, `sign_out`) and the CSRF token.
 *
 * Signed in means either the provider's login session (the user signed in while authorizing
 * an application in this browser) or this page's own sign-in: a signed cookie naming the
 * account, bound to this path, ending after {@link PAGE_SESSION_SECONDS}.
 */
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { ServiceError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import { isActive, sessionEnded } from '../accounts/provider-account.js';
import type { User } from '../accounts/user-store.js';
import type { AuthorizedApps } from '../oidc/authorized-apps.js';
import type { LoginSessions } from '../oidc/login-session.js';
import { checkCsrf, csrfToken } from './csrf.js';
import { field } from './form.js';
import { signIn } from './sign-in.js';
import type { SignInDependencies } from './sign-in.js';
import type { Views } from './views.js';
import { userActor } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';

export const APPLICATIONS_PATH = '/api/applications.php';

/** Lifetime of the page's own sign-in (absolute): long enough to review and revoke. */
export const PAGE_SESSION_SECONDS = 10 * 60;

export interface ApplicationsDependencies {
  apps: AuthorizedApps;
  findUser: (id: string) => Promise<User | null>;
  /** The page's password check, behind the same brute-force guard as the login page, audited alike. */
  signIn: SignInDependencies;
  loginSessions: LoginSessions;
  views: Views;
  body: Middleware;
}

const SCOPE_LABELS: Record<string, string> = {
  openid: 'your username, e-mail address and full name',
  profile: 'your name',
  email: 'your e-mail address',
};

export function applicationsRoutes(deps: ApplicationsDependencies): Router {
  const router = new Router();
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

  function signInPage(ctx: Context, locals: { username?: string; error?: string } = {}, status = 200) {
    deps.views.respond(ctx, 'applications-sign-in', { title: 'Sign in', csrf: csrfToken(ctx), path: APPLICATIONS_PATH, username: '', ...locals }, status);
  }

  router.get(APPLICATIONS_PATH, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const user = await signedInUser(ctx);
    if (!user) return signInPage(ctx);
    const apps = (await deps.apps.list(user.id)).map((app) => ({
      ...app,
      access: app.scopes.map((scope) => SCOPE_LABELS[scope] ?? scope),
      since: app.authorizedAt.toISOString(),
      sinceLabel: app.authorizedAt.toUTCString(),
    }));
    deps.views.respond(ctx, 'applications', {
      title: 'Your applications', csrf: csrfToken(ctx), path: APPLICATIONS_PATH, username: user.username, userId: user.id, apps, revoked: ctx.query.revoked === '1',
    });
  });

  router.post(APPLICATIONS_PATH, deps.body, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    checkCsrf(ctx);
    const action = field(ctx, 'action');
    if (action === 'sign_in') {
      const username = field(ctx, 'username');
      const outcome = await signIn(ctx, deps.signIn, { page: 'applications' }, username, field(ctx, 'password'));
      if (!outcome.user) return signInPage(ctx, { username, error: outcome.error }, outcome.status);
      const { user } = outcome;
      ctx.cookies.set(cookieName, `${user.id}~${Math.floor(Date.now() / 1000) + PAGE_SESSION_SECONDS}`, cookieOptions(ctx));
      return seeOther(ctx, APPLICATIONS_PATH);
    }
    if (action === 'sign_out') {
      ctx.cookies.set(cookieName, null, cookieOptions(ctx));
      await deps.loginSessions.end(ctx);
      return seeOther(ctx, APPLICATIONS_PATH);
    }
    if (action !== 'revoke') throw new ServiceError('invalid_request', 'Unknown action. Go back, reload the page and try again.');
    const user = await signedInUser(ctx);
    if (!user) return signInPage(ctx, { error: 'Your sign-in has ended. Sign in again to revoke access.' }, 401);
    // The form names the user its page showed: a tab left open while this browser signed in as
    // someone else since must not revoke that other person's access.
    const shown = field(ctx, 'for_user');
    if (shown !== '' && shown !== user.id) {
      throw new ServiceError('invalid_request', `This page was for another account; this browser has signed in as ${user.username} since. Nothing was revoked: reload the page.`, 409);
    }
    const clientId = field(ctx, 'client_id');
    if (clientId === '') throw new ServiceError('invalid_request', 'No application was chosen.');
    const grantIds = await deps.apps.revoke(user.id, clientId, requestContext(ctx, userActor(user.id)));
    if (grantIds.length > 0) noteClient(ctx, clientId);
    if (grantIds.length === 0) {
      throw new ServiceError('not_found', 'That application has no access to your account (it may have been revoked already).');
    }
    return seeOther(ctx, `${APPLICATIONS_PATH}?revoked=1`);
  });

  return router;
}

function seeOther(ctx: Context, location: string) {
  ctx.status = 303;
  ctx.redirect(location);
}
