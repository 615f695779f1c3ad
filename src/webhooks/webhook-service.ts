/**
 * Client webhooks as the rest of the app sees them: an event's messages added to writes (what
 * audit/records.ts `Recorder.event` uses), the endpoints' delivery log, a test event. Owns the
 * delivery worker of this process. A client's endpoints themselves are managed by
 * webhook-endpoints.ts, whose changes are recorded through the records built on this service.
 *
 * An event's messages are written by the write statement (store/statements.ts `WRITE`): in a
 * request with the request's other writes, in a change's transaction with that change, or on
 * their own; the statement finds the subscribed endpoints and the user's name itself.
 *
 * @example const webhooks = createWebhookService({ prisma, clock: () => new Date(), policy, retryBaseMs, log });
 *          await records.alone((record) => record.event('token.issued', { client_id, client_name, account_id, grant_id, scope }));
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Writes } from '../store/request-state.js';
import { createDeliveryWorker } from './delivery.js';
import type { DeliveryWorker } from './delivery.js';
import type { EventData, EventType, WebhookEvent } from './events.js';
import { createOutbox, enqueue, newEventId, outboxEvent } from './outbox.js';
import { sendAttempt } from './send.js';
import type { NetworkPolicy } from '../outbound/ssrf-guard.js';
import { createWebhookStore } from './webhook-store.js';
import type { WebhookDelivery } from './webhook-store.js';

/** What a caller knows when raising: `account_id` is turned into `username` by the write statement, never sent. */
export interface RaiseData {
  client_id: string;
  client_name: string;
  account_id?: string | undefined;
  username?: string | undefined;
  [field: string]: unknown;
}

/** A request about webhooks that cannot be met (a URL refused, an unknown event type, a disabled endpoint tested): `invalid_request`. */
export class WebhookInputError extends Error {
  override name = 'WebhookInputError';
}

export interface WebhookService {
  /** Adds the event's messages to `writes`; the worker wakes once they committed with a message. */
  add(writes: Writes, type: EventType, data: RaiseData): void;
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
  /** Longest wait between outbox checks when nothing wakes the worker (default 1 s). */
  pollMs?: number;
  /** One delivery attempt's time limit, and how long a claim on a message lasts (delivery.ts). */
  attemptTimeoutMs?: number;
  leaseMs?: number;
  /** Told each recorded attempt's outcome (the metrics count them). */
  onOutcome?: (status: 'delivered' | 'gone' | 'failed' | 'pending') => void;
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
    add,
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
