/**
 * Client webhooks as the rest of the app sees them: raise an event (alone, or inside the
 * transaction of the change that caused it), manage a client's endpoints, read their
 * delivery log, send a test event. Owns the delivery worker of this process.
 *
 * @example const webhooks = createWebhookService({ prisma, clock: () => new Date(), policy, retryBaseMs, usernameOf, log });
 *          await webhooks.raise('token.issued', { client_id, client_name, account_id, grant_id, scope });
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import { clientActor } from '../audit/audit-events.js';
import type { AuditContext, AuditLog } from '../audit/audit-log.js';
import type { Write } from '../store/write-batch.js';
import { createDeliveryWorker } from './delivery.js';
import type { DeliveryWorker } from './delivery.js';
import { EVENT_TYPES, isEventType } from './events.js';
import type { EventData, EventType, WebhookEvent } from './events.js';
import { createOutbox, enqueue, enqueueForSubscribers, newEventId, recipients, subscriberMessages } from './outbox.js';
import type { Writer } from './outbox.js';
import { sendAttempt } from './send.js';
import { generateSigningSecret } from './signing.js';
import type { NetworkPolicy } from './ssrf-guard.js';
import { webhookUrlProblem } from './ssrf-guard.js';
import { createWebhookStore } from './webhook-store.js';
import type { WebhookDelivery, WebhookEndpoint, WebhookStore } from './webhook-store.js';

/** What a caller knows when raising: `account_id` is turned into `username`, never sent. */
export interface RaiseData {
  client_id: string;
  client_name: string;
  account_id?: string | undefined;
  username?: string | undefined;
  [field: string]: unknown;
}

/** Records an event for every subscribed endpoint; inside `withEvents`, in its transaction. */
export type Raise = (type: EventType, data: RaiseData) => Promise<void>;

export class WebhookInputError extends Error {
  override name = 'WebhookInputError';
}

/** Endpoints a client may have. */
export const MAX_ENDPOINTS = 10;

export interface WebhookService {
  readonly raise: Raise;
  /**
   * Runs `change` in one transaction with the events it raises; wakes the worker after commit.
   * Inside it, raise with `username` rather than `account_id`: resolving an account reads outside
   * the transaction, which waits on it where there is one connection (PGlite). Each client's
   * subscribers are read once per transaction. `timeoutMs`: how long the transaction may take
   * (Prisma's default, 5 s, unless given: an operator ending thousands of grants needs more).
   */
  withEvents<T>(change: (tx: Writer, raise: Raise) => Promise<T>, options?: { timeoutMs?: number }): Promise<T>;
  readonly store: WebhookStore;
  /**
   * Validates and adds an endpoint; the signing secret is returned this once. Audited
   * (`webhook.endpoint_added`) in the same transaction; `context` defaults to the client acting.
   */
  addEndpoint(clientId: string, input: { url: unknown; events: unknown }, context?: AuditContext): Promise<{ endpoint: WebhookEndpoint; secret: string }>;
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
  usernameOf: (accountId: string) => Promise<string | undefined>;
  log: (error: unknown) => void;
  /** Where endpoint changes are audited. */
  audit: AuditLog;
  /**
   * Whether the client has an enabled endpoint, when the current request already knows (read
   * with the client, store/hot-reads.ts): none, and raising an event costs nothing; some, and
   * it costs one statement (recipients and messages at once). Undefined: look them up first.
   */
  clientHasWebhooks?: (clientId: string) => boolean | undefined;
  /**
   * Adds a write to the current request's one write statement (store/request-memo.ts), so an
   * event's messages are written with the change they announce, or not at all; false when no
   * request is running.
   */
  joinRequestWrites?: (key: string, write: Write) => boolean;
  /** Longest wait between outbox checks when nothing wakes the worker (default 1 s). */
  pollMs?: number;
  /** One delivery attempt's time limit, and how long a claim on a message lasts (delivery.ts). */
  attemptTimeoutMs?: number;
  leaseMs?: number;
  /** Told each recorded attempt's outcome (the metrics count them). */
  onOutcome?: (status: 'delivered' | 'gone' | 'failed' | 'pending') => void;
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

  /** Recipients of `type` for the client, read once per `seen` (one transaction). */
  type Subscribers = Map<string, Promise<{ id: string }[]>>;
  function subscribers(writer: Writer, seen: Subscribers, clientId: string, type: EventType) {
    const key = `${clientId}\0${type}`;
    if (!seen.has(key)) seen.set(key, recipients(writer, clientId, type));
    return seen.get(key)!;
  }

  /** The event as sent, created `now`: an `account_id` is turned into `username`, never sent. */
  async function eventOf(type: EventType, data: RaiseData, now: Date): Promise<WebhookEvent> {
    const { account_id: accountId, username: given, ...rest } = data;
    const username = given ?? (accountId ? await deps.usernameOf(accountId) : undefined);
    return { id: newEventId(), type, created_at: now.toISOString(), data: { ...rest, ...(username ? { username } : {}) } as EventData };
  }

  /** Writes the event's messages; answers the event and their ids (none when nobody subscribes). */
  async function write(writer: Writer, type: EventType, data: RaiseData, endpointId?: string, seen?: Subscribers): Promise<{ event?: WebhookEvent; messages: number; messageIds?: string[] }> {
    const known = endpointId ? undefined : deps.clientHasWebhooks?.(data.client_id);
    if (known === false) return { messages: 0 };
    const endpoints = known ? undefined
      : await (seen && !endpointId ? subscribers(writer, seen, data.client_id, type) : recipients(writer, data.client_id, type, endpointId));
    if (endpoints?.length === 0) return { messages: 0 };
    const now = clock();
    const event = await eventOf(type, data, now);
    if (!endpoints) return { event, messages: await enqueueForSubscribers(writer, event, data.client_id, now) };
    const messageIds = await enqueue(writer, event, endpoints.map((e) => e.id), now);
    return { event, messages: messageIds.length, messageIds };
  }

  const wakeFor = (messages: number) => { if (messages) worker.wake(); };

  return {
    store,
    async raise(type, data) {
      if (deps.clientHasWebhooks?.(data.client_id) === false) return;
      if (deps.joinRequestWrites) {
        const now = clock();
        const event = await eventOf(type, data, now);
        if (deps.joinRequestWrites(`outbox:${event.id}`, subscriberMessages(event, data.client_id, now, wakeFor))) return;
      }
      wakeFor((await write(prisma, type, data)).messages);
    },
    async withEvents(change, options = {}) {
      let raised = 0;
      const seen: Subscribers = new Map();
      const result = await prisma.$transaction(async (tx) => change(tx, async (type, data) => {
        raised += (await write(tx, type, data, undefined, seen)).messages;
      }), options.timeoutMs === undefined ? undefined : { timeout: options.timeoutMs });
      if (raised) worker.wake();
      return result;
    },
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
      const { event, messageIds = [] } = await write(prisma, 'webhook.test', {
        client_id: client.clientId, client_name: client.clientName, webhook_id: endpoint.id,
      }, endpoint.id);
      // Disabled or deleted between the look-up and the write: as if it had not been found.
      if (!event || messageIds.length === 0) return undefined;
      worker.wake();
      return { eventId: event.id, messageId: messageIds[0]! };
    },
    deliveries: (clientId, endpointId, limit = 50) => store.deliveries(clientId, { endpointId, limit }),
    start: () => worker.start(),
    stop: () => worker.stop(),
  };
}
