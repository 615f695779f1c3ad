/**
 * `/api/settings.php`: the application settings page. A client signs in with its client_id
 * and client_secret, then changes its name and redirect URI, rotates its secret (the old one
 * working for the grace chosen, which can be ended early), manages its
 * webhook endpoints, reads their recent deliveries and sends test events. Every form is
 * CSRF-protected and posts to this path with `?action=…` (and `&id=ep_…` for one endpoint);
 * plain changes redirect back (303), and a new secret is shown on the response itself, once.
 */
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { ServiceError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import type { Client } from '../generated/prisma/client.js';
import { authenticateClient } from '../clients/credentials.js';
import type { SecretCheck } from '../clients/credentials.js';
import { previousSecretWorks } from '../clients/client-settings.js';
import type { ClientSettings } from '../clients/client-settings.js';
import { ClientInputError } from '../clients/client-store.js';
import { EVENT_CATALOGUE, EVENT_TYPES } from '../webhooks/events.js';
import type { WebhookEndpoints } from '../webhooks/webhook-endpoints.js';
import type { WebhookService } from '../webhooks/webhook-service.js';
import { WebhookInputError } from '../webhooks/webhook-service.js';
import { checkCsrf, csrfToken, renewCsrf } from './csrf.js';
import { field } from './form.js';

/** Whether the form sent the field at all. */
const has = (ctx: Context, name: string) => Object.hasOwn((ctx.request as { body?: object }).body ?? {}, name);
import { graceChoices, graceField } from './grace-field.js';
import { endSettingsSession, readSettingsSession, SETTINGS_PATH, startSettingsSession } from './settings-session.js';
import type { Views } from './views.js';
import { clientActor } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';

export interface SettingsDependencies {
  findClient: (clientId: string) => Promise<Client | null>;
  /** The client secret check (clients/credentials.ts): the same everywhere a client authenticates. */
  checkSecret: SecretCheck;
  settings: ClientSettings;
  /** The client's webhook endpoints (webhooks/webhook-endpoints.ts). */
  endpoints: WebhookEndpoints;
  /** Their deliveries and test events. */
  webhooks: Pick<WebhookService, 'deliveries' | 'sendTest'>;
  views: Views;
  body: Middleware;
  clock: () => Date;
}

/** Messages for `?done=…` after a redirect. */
const NOTICES: Record<string, string> = {
  signed_in: 'Signed in.',
  saved: 'Saved. Subscribed webhooks received client.updated.',
  unchanged: 'Nothing changed.',
  deleted: 'Webhook endpoint removed.',
  enabled: 'Webhook endpoint enabled.',
  disabled: 'Webhook endpoint disabled; its pending deliveries were cancelled.',
  test_sent: 'Test event queued; it appears under Recent deliveries.',
  previous_ended: 'The previous client secret no longer works.',
  no_previous: 'There was no previous client secret still working.',
};

/** A new webhook signing secret to show once; `previousUntil`: a rotation's, when the old secret stops signing (null: at once). */
type NewWebhook = { url: string; secret: string; previousUntil?: string | null };
type Extra = { error?: string; notice?: string; newClientSecret?: string; newWebhook?: NewWebhook; form?: Record<string, unknown> };

/** The page's GET and POST; its path and what else it answers: http/route-table.ts. */
export function settingsRoutes(deps: SettingsDependencies): { GET: Middleware; POST: Middleware } {
  const { views, endpoints, webhooks, clock } = deps;

  function signInPage(ctx: Context, locals: { error?: string; clientId?: string; notice?: string } = {}, status = 200) {
    ctx.set('Cache-Control', 'no-store');
    views.respond(ctx, 'settings-signin', { title: 'Application settings', csrf: csrfToken(ctx), clientId: '', ...locals }, status);
  }

  async function settingsPage(ctx: Context, client: Client, extra: Extra = {}, status = 200) {
    ctx.set('Cache-Control', 'no-store');
    views.respond(ctx, 'settings', {
      title: 'Application settings',
      wide: true,
      csrf: csrfToken(ctx),
      client,
      previousSecret: { works: previousSecretWorks(client, clock()), until: client.previousSecretExpiresAt?.toISOString() ?? null },
      graceChoices: graceChoices(deps.settings.defaultGraceMs),
      now: clock(),
      endpoints: await endpoints.list(client.clientId),
      deliveries: await webhooks.deliveries(client.clientId, undefined, 20),
      eventTypes: EVENT_TYPES.map((type) => ({ type, id: `event_${type.replace('.', '_')}`, when: EVENT_CATALOGUE[type].when })),
      form: {},
      ...extra,
    }, status);
  }

  /** The client this browser signed in to settings as, named on the request's access line. */
  async function signedIn(ctx: Context): Promise<Client | undefined> {
    const client = await readSettingsSession(ctx, deps.findClient, clock());
    if (client) noteClient(ctx, client.clientId);
    return client;
  }

  const get: Middleware = async (ctx) => {
    const client = await signedIn(ctx);
    if (!client) return signInPage(ctx);
    const done = typeof ctx.query.done === 'string' && Object.hasOwn(NOTICES, ctx.query.done) ? NOTICES[ctx.query.done] : undefined;
    return settingsPage(ctx, client, done ? { notice: done } : {});
  };

  const post = compose<Context>([deps.body, async (ctx) => {
    if (!ctx.is('urlencoded')) throw new ServiceError('invalid_request', 'send the form as application/x-www-form-urlencoded');
    checkCsrf(ctx);
    const action = typeof ctx.query.action === 'string' ? ctx.query.action : '';
    const id = typeof ctx.query.id === 'string' ? ctx.query.id : '';
    const back = (done: string) => { ctx.status = 303; ctx.redirect(`${SETTINGS_PATH}?done=${done}`); };

    if (action === 'sign_in') {
      const clientId = field(ctx, 'client_id').trim();
      const client = await authenticateClient(deps.findClient, deps.checkSecret, { clientId, clientSecret: field(ctx, 'client_secret'), requestId: ctx.state.requestId });
      if (!client) return signInPage(ctx, { clientId, error: 'Unknown client_id or wrong client_secret.' }, 401);
      noteClient(ctx, client.clientId);
      startSettingsSession(ctx, client, clock());
      renewCsrf(ctx); // a token from before the sign-in is worth nothing after it (ui/csrf.ts)
      return back('signed_in');
    }
    const client = await signedIn(ctx);
    if (!client) return signInPage(ctx, { error: 'Your settings session has ended (it lasts 15 minutes and ends when the secret is rotated). Sign in again.' }, 401);
    // Each form names the application its page showed: a tab left open on another application
    // (this browser signed in as a second one since) must not change the one signed in now.
    const shown = field(ctx, 'for_client');
    if (shown !== '' && shown !== client.clientId) {
      throw new ServiceError('invalid_request', `This page was for another application; this browser has signed in to settings as ${client.clientName} (${client.clientId}) since. Nothing was changed: reload the page.`, 409);
    }
    const context = requestContext(ctx, clientActor(client.clientId));

    try {
      switch (action) {
        case 'sign_out':
          endSettingsSession(ctx);
          return signInPage(ctx, { notice: 'Signed out.' });
        case 'update_client': {
          // A machine client's form has no redirect URI field: it has none to change.
          const redirectUri = client.redirectUri === null ? {} : {
            redirectUri: field(ctx, 'redirect_uri'),
            // Absent from the form (an older page): left as they are.
            ...(has(ctx, 'post_logout_redirect_uri') ? { postLogoutRedirectUri: field(ctx, 'post_logout_redirect_uri') } : {}),
            ...(has(ctx, 'backchannel_logout_uri') ? { backchannelLogoutUri: field(ctx, 'backchannel_logout_uri') } : {}),
          };
          const { changed } = await deps.settings.update(client.clientId, { clientName: field(ctx, 'client_name'), ...redirectUri }, context);
          return back(changed.length ? 'saved' : 'unchanged');
        }
        case 'rotate_secret': {
          const graceMs = graceField(ctx, deps.settings.defaultGraceMs);
          const rotated = await deps.settings.rotateSecret(client.clientId, context, { graceMs });
          startSettingsSession(ctx, rotated.client, clock()); // this browser stays signed in; others end
          return await settingsPage(ctx, rotated.client, { newClientSecret: rotated.clientSecret });
        }
        case 'end_previous_secret': {
          const { ended } = await deps.settings.endPreviousSecret(client.clientId, context);
          return back(ended ? 'previous_ended' : 'no_previous');
        }
        case 'add_webhook': {
          const events = eventsField(ctx);
          const { endpoint, secret } = await endpoints.add(client.clientId, { url: field(ctx, 'url'), events }, context);
          return await settingsPage(ctx, client, { newWebhook: { url: endpoint.url, secret } }, 201);
        }
        case 'rotate_webhook_secret': {
          const rotated = await endpoints.rotateSecret(client.clientId, id, { graceMs: graceField(ctx, deps.settings.defaultGraceMs) }, context);
          if (!rotated) throw new ServiceError('not_found', 'This application has no webhook endpoint with that id.');
          const { endpoint } = rotated;
          const previousUntil = endpoint.previousSecret ? endpoint.previousSecretExpiresAt!.toISOString() : null;
          return await settingsPage(ctx, client, { newWebhook: { url: endpoint.url, secret: rotated.secret, previousUntil } });
        }
        case 'delete_webhook':
          if (!await endpoints.remove(client.clientId, id, context)) throw new ServiceError('not_found', 'This application has no webhook endpoint with that id.');
          return back('deleted');
        case 'enable_webhook':
        case 'disable_webhook':
          if (!await endpoints.setEnabled(client.clientId, id, action === 'enable_webhook')) {
            throw new ServiceError('not_found', 'This application has no webhook endpoint with that id.');
          }
          return back(action === 'enable_webhook' ? 'enabled' : 'disabled');
        case 'test_webhook':
          if (!await webhooks.sendTest({ clientId: client.clientId, clientName: client.clientName }, id)) {
            throw new ServiceError('not_found', 'This application has no webhook endpoint with that id.');
          }
          return back('test_sent');
        default:
          throw new ServiceError('invalid_request', `Unknown settings action "${action}".`);
      }
    } catch (error) {
      if (!(error instanceof ClientInputError) && !(error instanceof WebhookInputError)) throw error;
      const form = (ctx.request as { body?: Record<string, unknown> }).body ?? {};
      return settingsPage(ctx, client, { error: error.message, form: { ...form, events: eventsOrEmpty(ctx) } }, 400);
    }
  }]);

  return { GET: get, POST: post };
}

/** The checked `events` boxes: one value arrives as a string, several as a list. */
function eventsField(ctx: Context): string[] {
  const value = (ctx.request as { body?: Record<string, unknown> }).body?.events;
  if (value === undefined || value === '') return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  throw new WebhookInputError('events must be a list of event types');
}

function eventsOrEmpty(ctx: Context): string[] {
  try {
    return eventsField(ctx);
  } catch {
    return [];
  }
}
