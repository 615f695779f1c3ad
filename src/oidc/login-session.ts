/**
 * The provider's login session (its `_session` cookie), read from outside the provider's
 * routes: a user who signed in while authorizing an application is signed in on our own
 * pages too. `Session.get` builds a provider context for the request when there is none.
 *
 * @see https://github.com/panva/node-oidc-provider/blob/main/lib/models/session.js
 */
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { userActor } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';
import type { SessionEnd } from './session-end.js';

export interface LoginSessions {
  /** The account signed in through this browser, if any, and when it signed in (epoch seconds). */
  signedIn(ctx: Context): Promise<{ accountId: string; signedInAt: number | undefined } | undefined>;
  /**
   * Ends the browser's login session (authorizations will ask to sign in again), and what it made
   * (session-end.ts: grants without offline_access, back-channel logout to its applications).
   */
  end(ctx: Context): Promise<void>;
}

export function loginSessions(provider: Provider, sessions: Pick<SessionEnd, 'end'>): LoginSessions {
  return {
    async signedIn(ctx) {
      const { accountId, loginTs } = await provider.Session.get(ctx);
      return accountId ? { accountId, signedInAt: loginTs } : undefined;
    },
    async end(ctx) {
      const session = await provider.Session.get(ctx);
      if (!session.accountId) return;
      await session.destroy();
      await sessions.end({ sessionUid: session.uid }, 'applications_page', requestContext(ctx, userActor(session.accountId)));
    },
  };
}
