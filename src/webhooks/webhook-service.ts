/**
 * Client webhooks as the rest of the app sees them: an event's messages added to writes (what
 * audit/records.ts `Recorder.event` uses), a client's endpoints, their delivery log, a test
 * event. Owns the delivery worker of this process.
 *
 * An event's messages are written by the write statement (store/statements.ts `WRITE`): in a
 * request with the request's other writes, in a change's transaction with that change, or on
 * their own; the statement finds the subscribed endpoints and the user's name itself.
 *
 * @example const webhooks = createWebhookService({ prisma, clock: () => new Date(), policy, retryBaseMs, log, audit });
 *          await records.alone((record) => record.event('token.issued', { client_id, client_name, account_id, grant_id, scope }));
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import { clientActor } from '../audit/audit-log.js';
import type { AuditContext, AuditLog } from '../audit/audit-log.js';
import type { Writes } from '../store/request-state.js';
import { DEFAULT_GRACE_MS } from '../config/durations.js';
import { createDeliveryWorker } from './delivery.js';
import type { DeliveryWorker } from './delivery.js';
import { EVENT_TYPES, isEventType } from './events.js';
import type { EventData, EventType, WebhookEvent } from './events.js';
import { createOutbox, enqueue, MAX_ENDPOINTS, newEventId, outboxEvent } from './outbox.js';
import { sendAttempt } from './send.js';
import { rotateEndpointSecret } from './secret-rotation.js';
import { generateSigningSecret } from './signing.js';
import type { NetworkPolicy } from '../outbound/ssrf-guard.js';
import { webhookUrlProblem } from '../outbound/ssrf-guard.js';
import { createWebhookStore } from './webhook-store.js';
import type { WebhookDelivery, WebhookEndpoint, WebhookStore } from './webhook-store.js';

/** What a caller knows when raising: `account_id` is turned into `username` by the write statement, never sent. */
export interface RaiseData {
  client_id: string;
  client_name: string;
  account_id?: string | undefined;
  username?: string | undefined;
  [field: string]: unknown;
}

export class WebhookInputError extends Error {
  override name = 'WebhookInputError';
}

export { MAX_ENDPOINTS };

export interface WebhookService {
  /** Adds the event's messages to `writes`; the worker wakes once they committed with a message. */
  add(writes: Writes, type: EventType, data: RaiseData): void;
  readonly store: WebhookStore;
  /**
   * Validates and adds an endpoint; the signing secret is returned this once. Audited
   * (`webhook.endpoint_added`) in the same transaction; `context` defaults to the client acting.
   */
  addEndpoint(clientId: string, input: { url: unknown; events: unknown }, context?: AuditContext): Promise<{ endpoint: WebhookEndpoint; secret: string }>;
  /**
   * A new signing secret, returned this once; the old one signs beside it for `graceMs`
   * (CLIENT_SECRET_ROTATION_GRACE unless given; 0: not at all). Undefined when the client has no
   * such endpoint. Audited (`webhook.secret_rotated`): secret-rotation.ts.
   */
  rotateSecret(clientId: string, endpointId: string, options: { graceMs?: number }, context: AuditContext): Promise<{ endpoint: WebhookEndpoint; secret: string } | undefined>;
  /** Removes an endpoint and its delivery log (`webhook.endpoint_removed`); false when the client has no such endpoint. */
  removeEndpoint(clientId: string, endpointId: string, context?: AuditContext): Promise<boolean>;
  /** Sends `webhook.test` to one endpoint; undefined when the client has no such endpoint. */
  sendTest(client: { clientId: string; clientName: string }, endpointId: string): Promise<{ eventId: string; messageId: string } | undefined>;
  deliveries(clientId: string, endpointId?: string, limit?: number): Promise<(WebhookDelivery & { endpoint: { url: string } })[]>;
  start(): void;
  stop(): Promise<void>;
}

export interface WebhookDependencies {
  prisma: PrismaClient;
  clock: () => Date;
  policy: NetworkPolicy;
  retryBaseMs: number;
  log: (error: unknown) => void;
  /** Where endpoint changes are audited. */
  audit: AuditLog;
  /** Longest wait between outbox checks when nothing wakes the worker (default 1 s). */
  pollMs?: number;
  /** One delivery attempt's time limit, and how long a claim on a message lasts (delivery.ts). */
  attemptTimeoutMs?: number;
  leaseMs?: number;
  /** Told each recorded attempt's outcome (the metrics count them). */
  onOutcome?: (status: 'delivered' | 'gone' | 'failed' | 'pending') => void;
  /** How long a rotated signing secret goes on signing unless the rotation says (default 24 h). */
  secretRotationGraceMs?: number;
}

function validEvents(value: unknown): EventType[] {
  if (!Array.isArray(value) || value.length === 0) throw new WebhookInputError('events must be a non-empty list of event types');
  const unknown = (value as unknown[]).filter((type) => !isEventType(type));
  if (unknown.length) {
    throw new WebhookInputError(`unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => JSON.stringify(u)).join(', ')}; known: ${EVENT_TYPES.join(', ')}`);
  }
  return EVENT_TYPES.filter((type) => (value as unknown[]).includes(type)); // duplicates merged, catalogue order
}

export function createWebhookService(deps: WebhookDependencies): WebhookService {
  const { prisma, clock } = deps;
  const store = createWebhookStore(prisma);
  const outbox = createOutbox(prisma);
  const worker: DeliveryWorker = createDeliveryWorker({
    outbox, clock, policy: deps.policy, retryBaseMs: deps.retryBaseMs, send: sendAttempt, log: deps.log,
    ...(deps.onOutcome ? { onOutcome: deps.onOutcome } : {}),
    ...(deps.pollMs ? { pollMs: deps.pollMs } : {}),
    ...(deps.attemptTimeoutMs ? { attemptTimeoutMs: deps.attemptTimeoutMs } : {}),
    ...(deps.leaseMs ? { leaseMs: deps.leaseMs } : {}),
  });

  /** The event as sent, created `now`: `username` if the caller knows it, else the statement adds it. */
  function eventOf(type: EventType, data: RaiseData, now: Date): WebhookEvent {
    const { account_id: _accountId, ...rest } = data;
    return { id: newEventId(), type, created_at: now.toISOString(), data: rest as EventData };
  }

  function add(writes: Writes, type: EventType, data: RaiseData) {
    const now = clock();
    const event = eventOf(type, data, now);
    writes.events.push(outboxEvent(event, data.client_id, data.username ? undefined : data.account_id, now));
    writes.committed.push((announced) => { if (announced.has(event.id)) worker.wake(); });
  }

  return {
    store,
    add,
    async addEndpoint(clientId, input, context = { actor: clientActor(clientId) }) {
      if (typeof input.url !== 'string' || input.url.trim() === '') throw new WebhookInputError('url is required');
      const url = input.url.trim();
      const events = validEvents(input.events);
      const problem = await webhookUrlProblem(url, deps.policy);
      if (problem) throw new WebhookInputError(problem);
      if (await store.count(clientId) >= MAX_ENDPOINTS) throw new WebhookInputError(`a client may have at most ${MAX_ENDPOINTS} webhook endpoints`);
      const secret = generateSigningSecret();
      const endpoint = await deps.audit.within((write) => prisma.$transaction(async (tx) => {
        const added = await store.create({ clientId, url, events, secret }, tx);
        // The URL's origin only: a webhook URL may carry a capability in its path or query.
        const detail = { webhook_id: added.id, url_origin: new URL(url).origin, events };
        await write(tx, 'webhook.endpoint_added', { client: clientId, detail }, context);
        return added;
      }));
      return { endpoint, secret };
    },
    rotateSecret: (clientId, endpointId, { graceMs = deps.secretRotationGraceMs ?? DEFAULT_GRACE_MS }, context) =>
      rotateEndpointSecret({ prisma, audit: deps.audit, clock }, clientId, endpointId, graceMs, context),
    removeEndpoint(clientId, endpointId, context = { actor: clientActor(clientId) }) {
      return deps.audit.within((write) => prisma.$transaction(async (tx) => {
        const removed = await store.remove(clientId, endpointId, tx);
        if (removed) await write(tx, 'webhook.endpoint_removed', { client: clientId, detail: { webhook_id: endpointId } }, context);
        return removed;
      }));
    },
    async sendTest(client, endpointId) {
      const endpoint = await store.find(client.clientId, endpointId);
      if (!endpoint) return undefined;
      if (!endpoint.enabled) throw new WebhookInputError('this endpoint is disabled: enable it first');
      const now = clock();
      const event = eventOf('webhook.test', { client_id: client.clientId, client_name: client.clientName, webhook_id: endpoint.id }, now);
      // To this endpoint whatever it subscribes to; disabled or deleted since the look-up: as if not found.
      const enabled = await prisma.webhookEndpoint.findMany({ where: { clientId: client.clientId, id: endpoint.id, enabled: true }, select: { id: true } });
      const [messageId] = await enqueue(prisma, event, enabled.map((e) => e.id), now);
      if (!messageId) return undefined;
      worker.wake();
      return { eventId: event.id, messageId };
    },
    deliveries: (clientId, endpointId, limit = 50) => store.deliveries(clientId, { endpointId, limit }),
    start: () => worker.start(),
    stop: () => worker.stop(),
  };
}
