/**
 * A client's webhook endpoints, as its settings page and the webhooks API manage them: listed,
 * added (the signing secret returned this once), enabled or disabled, their secret rotated
 * (secret-rotation.ts), removed. Adding, rotating and removing are changes of ours, each
 * recorded with its audit row in its own transaction (audit/records.ts `records.change`); kept
 * apart from the webhook service, which the records are built on.
 *
 * @example const endpoints = createWebhookEndpoints({ prisma, changes: records.change, policy, clock });
 *          const { endpoint, secret } = await endpoints.add(clientId, { url, events }, context);
 */
import { clientActor } from '../audit/audit-log.js';
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import { DEFAULT_GRACE_MS } from '../config/durations.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { NetworkPolicy } from '../outbound/ssrf-guard.js';
import { webhookUrlProblem } from '../outbound/ssrf-guard.js';
import { EVENT_TYPES, isEventType } from './events.js';
import type { EventType } from './events.js';
import { MAX_ENDPOINTS } from './outbox.js';
import { rotateEndpointSecret } from './secret-rotation.js';
import { generateSigningSecret } from './signing.js';
import { WebhookInputError } from './webhook-service.js';
import { createWebhookStore } from './webhook-store.js';
import type { WebhookEndpoint, WebhookStore } from './webhook-store.js';

export interface WebhookEndpoints extends Pick<WebhookStore, 'list' | 'find' | 'setEnabled'> {
  /**
   * Validates and adds an endpoint; the signing secret is returned this once. Audited
   * (`webhook.endpoint_added`) in the same transaction; `context` defaults to the client acting.
   */
  add(clientId: string, input: { url: unknown; events: unknown }, context?: AuditContext): Promise<{ endpoint: WebhookEndpoint; secret: string }>;
  /**
   * A new signing secret, returned this once; the old one signs beside it for `graceMs`
   * (CLIENT_SECRET_ROTATION_GRACE unless given; 0: not at all). Undefined when the client has no
   * such endpoint. Audited (`webhook.secret_rotated`): secret-rotation.ts.
   */
  rotateSecret(clientId: string, endpointId: string, options: { graceMs?: number }, context: AuditContext): Promise<{ endpoint: WebhookEndpoint; secret: string } | undefined>;
  /** Removes an endpoint and its delivery log (`webhook.endpoint_removed`); false when the client has no such endpoint. */
  remove(clientId: string, endpointId: string, context?: AuditContext): Promise<boolean>;
}

export interface WebhookEndpointDependencies {
  prisma: PrismaClient;
  /** Where a change is made with its audit row (audit/records.ts `records.change`). */
  changes: ChangeTransaction;
  /** Where a webhook URL may lead (the SSRF guard). */
  policy: NetworkPolicy;
  clock: () => Date;
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

export function createWebhookEndpoints({ prisma, changes, policy, clock, secretRotationGraceMs = DEFAULT_GRACE_MS }: WebhookEndpointDependencies): WebhookEndpoints {
  const store = createWebhookStore(prisma);
  return {
    list: store.list,
    find: store.find,
    setEnabled: store.setEnabled,
    async add(clientId, input, context = { actor: clientActor(clientId) }) {
      if (typeof input.url !== 'string' || input.url.trim() === '') throw new WebhookInputError('url is required');
      const url = input.url.trim();
      const events = validEvents(input.events);
      const problem = await webhookUrlProblem(url, policy);
      if (problem) throw new WebhookInputError(problem);
      if (await store.count(clientId) >= MAX_ENDPOINTS) throw new WebhookInputError(`a client may have at most ${MAX_ENDPOINTS} webhook endpoints`);
      const secret = generateSigningSecret();
      const endpoint = await changes(async (tx, record) => {
        const added = await store.create({ clientId, url, events, secret }, tx);
        // The URL's origin only: a webhook URL may carry a capability in its path or query.
        const detail = { webhook_id: added.id, url_origin: new URL(url).origin, events };
        await record.audit('webhook.endpoint_added', { client: clientId, detail }, context);
        return added;
      });
      return { endpoint, secret };
    },
    rotateSecret: (clientId, endpointId, { graceMs = secretRotationGraceMs }, context) =>
      rotateEndpointSecret({ changes, clock }, clientId, endpointId, graceMs, context),
    remove(clientId, endpointId, context = { actor: clientActor(clientId) }) {
      return changes(async (tx, record) => {
        const removed = await store.remove(clientId, endpointId, tx);
        if (removed) await record.audit('webhook.endpoint_removed', { client: clientId, detail: { webhook_id: endpointId } }, context);
        return removed;
      });
    },
  };
}
