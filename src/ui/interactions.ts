/**
 * The login and consent pages the provider sends users to (`interactions.url`). They live
 * under `/interaction/<uid>`, the path of the provider's interaction cookie, so browsers
 * send that cookie with every post here.
 *
 * @see https://github.com/panva/node-oidc-provider/blob/main/docs/README.md#interactions
 */
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type Provider from 'oidc-provider';
import { errors } from 'oidc-provider';
import type { InteractionResults } from 'oidc-provider';
import { ServiceError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import type { User, UserStore } from '../accounts/user-store.js';
import type { LoginGuard } from '../accounts/login-guard.js';
import { ANONYMOUS, userActor } from '../audit/audit-log.js';
import type { Records } from '../audit/records.js';
import { requestContext } from '../http/audit-context.js';
import { INTERACTION_PATHS } from '../oidc/routes.js';
import type { ConsentRequest, ConsentView } from './consent-view.js';
import { checkCsrf, csrfToken } from './csrf.js';
import { field } from './form.js';
import { signIn } from './sign-in.js';
import type { Views } from './views.js';

export interface InteractionDependencies {
  provider: Provider;
  users: UserStore;
  /** A user by id, read with the request's other reads (store/hot-reads.ts). */
  findUser: (id: string) => Promise<User | null>;
  /** Brute-force protection of the login form. */
  guard: LoginGuard;
  /**
   * Sign-ins and consent decisions are audited (`login.*`, `consent.granted`, `consent.denied`);
   * a refusal is announced (`authorization.denied`; an approval is the provider's event).
   */
  records: Pick<Records, 'request' | 'alone'>;
  views: Views;
  body: Middleware;
  /** What the consent page says of the request (ui/consent-view.ts). */
  consent: (request: ConsentRequest) => Promise<ConsentView>;
}

/** A sign-in step that has ended (finished in another tab, gone Back to, expired after 1 hour). */
const stale = () => new ServiceError('invalid_request', 'This sign-in step is no longer current (it was finished, or it expired). Return to the application and start again.');

/**
 * `work` on the provider's interaction: one that is gone (the provider's SessionNotFound,
 * "interaction session not found") is the readable {@link stale} page, not the provider's words.
 */
async function current<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw error instanceof errors.SessionNotFound ? stale() : error;
  }
}

export function interactionRoutes({ provider, users, findUser, guard, records, views, body, consent }: InteractionDependencies): Router {
  const router = new Router({ prefix: INTERACTION_PATHS });

  async function details(ctx: Context, expected?: 'login' | 'consent') {
    const interaction = await current(() => provider.interactionDetails(ctx.req, ctx.res));
    if (interaction.uid !== ctx.params.uid || (expected && interaction.prompt.name !== expected)) throw stale();
    noteClient(ctx, String(interaction.params.client_id));
    const client = await provider.Client.find(String(interaction.params.client_id));
    if (!client) throw new ServiceError('invalid_request', 'The application is no longer registered.');
    return { interaction, clientName: client.clientName ?? client.clientId };
  }

  async function finish(ctx: Context, result: InteractionResults, merge: boolean) {
    const location = await current(() => provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge }));
    ctx.status = 303;
    ctx.redirect(location);
  }

  function loginPage(ctx: Context, locals: { uid: string; clientName: string; username?: string; error?: string }, status = 200) {
    ctx.set('Cache-Control', 'no-store');
    views.respond(ctx, 'login', { title: 'Sign in', csrf: csrfToken(ctx), username: '', ...locals }, status);
  }

  router.get('/', async (ctx) => {
    const { interaction, clientName } = await details(ctx);
    if (interaction.prompt.name === 'login') return loginPage(ctx, { uid: interaction.uid, clientName });
    const user = await findUser(String(interaction.session?.accountId));
    const asked = await consent({ clientId: String(interaction.params.client_id), params: interaction.params, details: interaction.prompt.details });
    ctx.set('Cache-Control', 'no-store');
    views.respond(ctx, 'consent', { title: 'Allow access', csrf: csrfToken(ctx), uid: interaction.uid, clientName, username: user?.username, ...asked });
  });

  router.post('/login', body, async (ctx) => {
    checkCsrf(ctx);
    const { interaction, clientName } = await details(ctx, 'login');
    const username = field(ctx, 'username');
    const password = field(ctx, 'password');
    const place = { page: 'login', clientId: String(interaction.params.client_id) } as const;
    const outcome = await signIn(ctx, { guard, users, records }, place, username, password);
    if (outcome.user) return finish(ctx, { login: { accountId: outcome.user.id } }, false);
    return loginPage(ctx, { uid: interaction.uid, clientName, username, error: outcome.error }, outcome.status);
  });

  router.post('/confirm', body, async (ctx) => {
    checkCsrf(ctx);
    const { interaction } = await details(ctx, 'consent');
    const { prompt: { details: missing }, params, session, grantId } = interaction;
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session!.accountId, clientId: String(params.client_id) });
    if (!grant) throw stale();
    if (Array.isArray(missing.missingOIDCScope)) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (Array.isArray(missing.missingOIDCClaims)) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries((missing.missingResourceScopes ?? {}) as Record<string, string[]>)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const savedGrantId = await grant.save();
    const fields = { user: grant.accountId, client: grant.clientId, detail: { scope: grant.getOIDCScope() } };
    // The row goes with the grant it records: the grant's save waits in the request's writes
    // (oidc/adapter.ts), and so does the row, so both are stored or neither.
    await records.request((record) => { record.audit('consent.granted', fields, requestContext(ctx, userActor(grant.accountId!))); });
    await finish(ctx, { consent: { grantId: savedGrantId } }, true);
  });

  // Cancel on the login page and Deny on the consent page. @see RFC 6749 §4.1.2.1 (access_denied)
  router.post('/abort', body, async (ctx) => {
    checkCsrf(ctx);
    const { interaction, clientName } = await details(ctx);
    const clientId = String(interaction.params.client_id);
    const accountId = interaction.session?.accountId;
    const fields = { user: accountId, client: clientId, detail: { prompt: interaction.prompt.name } };
    await records.request((record) => {
      // A refusal names no one (webhooks/events.ts): the client learns nothing of a user who says no.
      record.event('authorization.denied', { client_id: clientId, client_name: clientName });
      record.audit('consent.denied', fields, requestContext(ctx, accountId ? userActor(accountId) : ANONYMOUS));
    });
    await finish(ctx, { error: 'access_denied', error_description: 'the user denied the request' }, false);
  });

  return router;
}
