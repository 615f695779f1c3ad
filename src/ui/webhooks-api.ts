/**
 * `/api/webhooks.php`: a client's webhook endpoints for scripts, authenticated with the
 * client's own credentials (HTTP Basic). Secrets are returned only when an endpoint is
 * created or its secret rotated. Route table:
 *
 * | request                                   | answer                                   |
 * |-------------------------------------------|------------------------------------------|
 * | GET                                       | 200 {webhooks: [endpoint…]}              |
 * | GET ?id=ep_…                              | 200 endpoint                             |
 * | GET ?id=ep_…&action=deliveries[&limit=n]  | 200 {deliveries: [delivery…]}, newest first |
 * | POST JSON {url, events}                   | 201 endpoint + secret                    |
 * | POST ?id=ep_…&action=test                 | 202 {event_id, delivery_id}              |
 * | POST ?id=ep_…&action=enable / disable     | 200 endpoint                             |
 * | POST ?id=ep_…&action=rotate_secret[&grace=1h] | 200 endpoint + new secret (the old one signs too until previous_secret_expires_at) |
 * | DELETE ?id=ep_…                           | 204                                      |
 *
 * Every POST is `Content-Type: application/json`, even without a body (anything else: 400 invalid_request).
 */
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { ServiceError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import type { Client } from '../generated/prisma/client.js';
import { authenticateClient, basicCredentials } from '../clients/credentials.js';
import type { SecretCheck } from '../clients/credentials.js';
import type { WebhookEndpoints } from '../webhooks/webhook-endpoints.js';
import type { WebhookService } from '../webhooks/webhook-service.js';
import { WebhookInputError } from '../webhooks/webhook-service.js';
import { endpointView } from '../webhooks/webhook-store.js';
import type { WebhookDelivery } from '../webhooks/webhook-store.js';
import { clientActor } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';
import { requireGrace } from '../config/durations.js';

export const WEBHOOKS_PATH = '/api/webhooks.php';

export interface WebhooksApiDependencies {
  findClient: (clientId: string) => Promise<Client | null>;
  /** The client secret check (clients/credentials.ts): the same everywhere a client authenticates. */
  checkSecret: SecretCheck;
  /** The client's webhook endpoints (webhooks/webhook-endpoints.ts). */
  endpoints: WebhookEndpoints;
  /** Their deliveries and test events. */
  webhooks: Pick<WebhookService, 'deliveries' | 'sendTest'>;
  body: Middleware;
}

export function deliveryView(delivery: WebhookDelivery) {
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return {
    id: delivery.id,
    webhook_id: delivery.endpointId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    last_status_code: delivery.lastStatusCode,
    last_error: delivery.lastError,
    created_at: delivery.createdAt.toISOString(),
    last_attempt_at: iso(delivery.lastAttemptAt),
    next_attempt_at: iso(delivery.nextAttemptAt),
    delivered_at: iso(delivery.deliveredAt),
  };
}

function query(ctx: Context, name: string): string | undefined {
  const value = ctx.query[name];
  if (Array.isArray(value)) throw new ServiceError('invalid_request', `${name} must be given once`);
  return value === undefined || value === '' ? undefined : value;
}

/** The API's methods; its path and what else it answers: http/route-table.ts. */
export function webhooksApi({ findClient, checkSecret, endpoints, webhooks, body }: WebhooksApiDependencies): { GET: Middleware; POST: Middleware; DELETE: Middleware } {
  const notFound = () => new ServiceError('not_found', 'this client has no webhook endpoint with that id');

  async function authenticate(ctx: Context): Promise<Client> {
    const credentials = basicCredentials(ctx.get('authorization'));
    const client = credentials && await authenticateClient(findClient, checkSecret, { ...credentials, requestId: ctx.state.requestId });
    if (!client) {
      ctx.set('WWW-Authenticate', 'Basic realm="webhooks", charset="UTF-8"');
      throw new ServiceError('invalid_client', 'authenticate with HTTP Basic client_id:client_secret');
    }
    return client;
  }

  async function handle(ctx: Context, work: () => Promise<void>) {
    ctx.set('Cache-Control', 'no-store');
    try {
      await work();
    } catch (error) {
      if (error instanceof WebhookInputError) throw new ServiceError('invalid_request', error.message);
      throw error;
    }
  }

  const get: Middleware = (ctx) => handle(ctx, async () => {
    const client = await authenticate(ctx);
    const id = query(ctx, 'id');
    const action = query(ctx, 'action');
    if (!id) {
      if (action) throw new ServiceError('invalid_request', `action=${action} needs an id`);
      ctx.body = { webhooks: (await endpoints.list(client.clientId)).map(endpointView) };
      return;
    }
    if (action !== undefined && action !== 'deliveries') {
      throw new ServiceError('invalid_request', 'action must be deliveries (GET), or test, enable, disable or rotate_secret (POST)');
    }
    const endpoint = await endpoints.find(client.clientId, id);
    if (!endpoint) throw notFound();
    if (action === undefined) {
      ctx.body = endpointView(endpoint);
      return;
    }
    const limit = Number(query(ctx, 'limit') ?? 50);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new ServiceError('invalid_request', 'limit must be a whole number from 1 to 100');
    ctx.body = { deliveries: (await webhooks.deliveries(client.clientId, endpoint.id, limit)).map(deliveryView) };
  });

  // Credentials before the body: a stranger learns nothing from how a body is parsed. Then every
  // POST must be JSON, body or not: a browser caches Basic credentials, and a cross-site page can
  // send a form or a body-less POST with them, but not application/json without a CORS preflight,
  // which this path never grants.
  const authenticated: Middleware = async (ctx, next) => {
    const client = ctx.state.webhooksClient = await authenticate(ctx);
    noteClient(ctx, client.clientId);
    if (ctx.request.type !== 'application/json') {
      ctx.set('Cache-Control', 'no-store');
      throw new ServiceError('invalid_request', 'send every POST as Content-Type: application/json (an empty body is fine for ?action=…)');
    }
    await next();
  };

  const post = compose<Context>([authenticated, body, (ctx) => handle(ctx, async () => {
    const client = ctx.state.webhooksClient!;
    const id = query(ctx, 'id');
    const action = query(ctx, 'action');
    if (!id) {
      if (action) throw new ServiceError('invalid_request', `action=${action} needs an id`);
      const input = (ctx.request as { body?: unknown }).body;
      if (!input || typeof input !== 'object' || Array.isArray(input)) throw new ServiceError('invalid_request', 'the body must be a JSON object {url, events}');
      const { url, events } = input as Record<string, unknown>;
      const { endpoint, secret } = await endpoints.add(client.clientId, { url, events }, requestContext(ctx, clientActor(client.clientId)));
      ctx.status = 201;
      ctx.body = { ...endpointView(endpoint), secret };
      return;
    }
    if (action !== 'test' && action !== 'enable' && action !== 'disable' && action !== 'rotate_secret') {
      throw new ServiceError('invalid_request', 'action must be test, enable, disable or rotate_secret');
    }
    if (action === 'rotate_secret') {
      const grace = query(ctx, 'grace');
      const graceMs = grace === undefined ? undefined : requireGrace(grace, (problem) => new ServiceError('invalid_request', `grace ${problem}`));
      const rotated = await endpoints.rotateSecret(client.clientId, id, graceMs === undefined ? {} : { graceMs }, requestContext(ctx, clientActor(client.clientId)));
      if (!rotated) throw notFound();
      ctx.body = { ...endpointView(rotated.endpoint), secret: rotated.secret };
    } else if (action === 'test') {
      const sent = await webhooks.sendTest({ clientId: client.clientId, clientName: client.clientName }, id);
      if (!sent) throw notFound();
      ctx.status = 202;
      ctx.body = { event_id: sent.eventId, delivery_id: sent.messageId };
    } else {
      if (!await endpoints.setEnabled(client.clientId, id, action === 'enable')) throw notFound();
      const endpoint = await endpoints.find(client.clientId, id);
      if (!endpoint) throw notFound(); // deleted in the meantime
      ctx.body = endpointView(endpoint);
    }
  })]);

  const remove: Middleware = (ctx) => handle(ctx, async () => {
    const client = await authenticate(ctx);
    const id = query(ctx, 'id');
    if (!id) throw new ServiceError('invalid_request', "missing required parameter 'id'");
    if (!await endpoints.remove(client.clientId, id, requestContext(ctx, clientActor(client.clientId)))) throw notFound();
    ctx.status = 204;
  });

  return { GET: get, POST: post, DELETE: remove };
}
