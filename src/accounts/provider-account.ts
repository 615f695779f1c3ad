/**
 * A user as the provider sees one (its `findAccount`): absent when disabled, and the claims each
 * scope releases. The spec's userinfo body is `{username, email, full_name}`; `profile` and
 * `email` add the OIDC standard names.
 *
 * A disabled user is absent, and so is the user of a login session an operator ended: such a
 * session authorizes nothing (oidc/provider.ts asks it to log in again), and a token of theirs that survived would read nothing; they
 * cannot sign in either (user-store.ts), and are told what a wrong password is told.
 *
 * @see OpenID Connect Core §5.1 (standard claims)
 */
import type { FindAccount } from 'oidc-provider';
import type { User } from '../generated/prisma/client.js';
import type { StoreGuard } from '../store/store-failure.js';

/** Whether a user may sign in and be seen by the provider (not disabled). */
export const isActive = (user: Pick<User, 'disabledAt'>) => !user.disabledAt;

/**
 * Whether a sign-in made at `signedInAt` (epoch seconds, as the provider's session keeps it)
 * has been ended by an operator since (users:sign-out, users:set-password, users:disable): one in
 * the very second the sessions were ended is ended too, as a session cannot say which came first
 * (so a sign-in after the end finishes in the next second: ui/sign-in.ts).
 * One stored instant ends every session wherever it lives (Redis, this process's memory, a
 * page's signed cookie), with the service running or not; later sessions are untouched.
 */
export function sessionEnded(user: Pick<User, 'sessionsEndedAt'>, signedInAt: number | undefined): boolean {
  if (!user.sessionsEndedAt) return false;
  return signedInAt === undefined || signedInAt <= Math.floor(user.sessionsEndedAt.getTime() / 1000);
}

/** Which claims each scope releases. Every token carries `openid` (oidc/spec-glue.ts adds it at authorization). */
export const CLAIMS = {
  openid: ['sub', 'username', 'email', 'full_name'],
  profile: ['name', 'preferred_username'],
  email: ['email', 'email_verified'],
};

/** `database`: the guard of the users' store; inside the provider a failure must be a 503 it answers as is. */
export function createFindAccount(findById: (id: string) => Promise<User | null>, database: StoreGuard): FindAccount {
  return async (ctx, id, token) => {
    const user = await database(() => findById(id));
    if (!user || !isActive(user)) return undefined;
    // Asked for the login session's own account (not a token's): a session an operator ended is
    // no account at all, so the provider asks for a new login (oidc/provider.ts).
    const session = token ? undefined : ctx?.oidc?.session;
    if (session?.accountId === id && sessionEnded(user, session.loginTs)) return undefined;
    return {
      accountId: user.id,
      claims: () => ({
        sub: user.id,
        username: user.username,
        email: user.email,
        full_name: user.fullName,
        name: user.fullName,
        preferred_username: user.username,
        email_verified: user.emailVerified,
      }),
    };
  };
}
