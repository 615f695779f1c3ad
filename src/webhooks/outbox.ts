/**
 * The durable outbox. Raising an event writes one row per subscribed, enabled endpoint (a
 * "message", whose id is the `webhook-id` on every attempt), in the caller's transaction when
 * there is one. Workers claim due rows with `FOR UPDATE SKIP LOCKED` and a lease longer than
 * an attempt may take, so several instances never send the same attempt twice; a worker
 * that dies mid-attempt leaves a lease that expires, and the row is tried again
 * (at-least-once).
 *
 * @see https://microservices.io/patterns/data/transactional-outbox.html
 */
import { randomBytes } from 'node:crypto';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { Leases } from '../outbox/worker.js';
import type { OutboxEvent } from '../store/request-state.js';
import type { WebhookEvent } from './events.js';
import { PENDING } from './webhook-store.js';

/** A Prisma client or an open transaction: whatever the caller's change is written with. */
export type Writer = Prisma.TransactionClient | PrismaClient;

export function newEventId(): string {
  return `evt_${randomBytes(16).toString('base64url')}`;
}

function newMessageId(): string {
  return `msg_${randomBytes(16).toString('base64url')}`;
}

/** Writes the messages of `event` for `endpointIds` (a test event's one endpoint); returns their ids. */
export async function enqueue(writer: Writer, event: WebhookEvent, endpointIds: string[], now: Date): Promise<string[]> {
  const rows = endpointIds.map((endpointId) => ({
    id: newMessageId(),
    endpointId,
    eventId: event.id,
    eventType: event.type,
    payload: event as unknown as Prisma.InputJsonValue,
    nextAttemptAt: now,
    createdAt: now,
  }));
  if (rows.length) await writer.webhookDelivery.createMany({ data: rows });
  return rows.map((row) => row.id);
}

/** The most endpoints a client may have (the webhooks API refuses an 11th). */
export const MAX_ENDPOINTS = 10;

/**
 * The event as an outbox row of a write statement (store/statements.ts `WRITE`): a message for
 * each enabled endpoint of `clientId` subscribed to its type, written with the change it
 * announces or not at all. `accountId` is turned into the payload's `username` by the statement.
 */
export function outboxEvent(event: WebhookEvent, clientId: string, accountId: string | undefined, now: Date): OutboxEvent {
  // Ids are base64url (no commas): one text parameter, split in SQL.
  const messageIds = Array.from({ length: MAX_ENDPOINTS }, newMessageId).join(',');
  return { eventId: event.id, type: event.type, payload: JSON.stringify(event), clientId, accountId: accountId ?? null, messageIds, at: now.toISOString() };
}

/** A message claimed for one attempt. */
export interface Claimed {
  id: string;
  endpointId: string;
  url: string;
  secret: string;
  /** A rotated secret that signs beside `secret` until its grace ends (signing.ts). */
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  payload: WebhookEvent;
  attempts: number;
}

/** How an attempt ended, as the outbox records it. */
export type Outcome =
  | { status: 'delivered'; statusCode: number }
  | { status: 'pending'; statusCode: number | null; error: string; nextAttemptAt: Date }
  | { status: 'failed'; statusCode: number | null; error: string }
  | { status: 'gone'; statusCode: 410 };

/** An outbox of HTTP deliveries: its leases (outbox/worker.ts), and the record of an attempt's outcome. */
export interface Outbox<M extends { id: string } = Claimed> extends Leases<M> {
  /** Records an attempt of a message this owner holds (no-op if its lease was lost). */
  record(owner: string, id: string, outcome: Outcome, at: Date): Promise<void>;
}

export function createOutbox(prisma: PrismaClient): Outbox {
  return {
    async claim(owner, limit, now, leaseUntil) {
      const rows = await prisma.$queryRaw<{ id: string; endpoint_id: string; url: string; secret: string; previous_secret: string | null; previous_secret_expires_at: Date | null; payload: WebhookEvent; attempts: number }[]>`
        UPDATE webhook_deliveries d
        SET lease_owner = ${owner}, lease_expires_at = ${leaseUntil}
        FROM (
          SELECT w.id FROM webhook_deliveries w
          JOIN webhook_endpoints e ON e.id = w.endpoint_id
          WHERE w.status = 'pending' AND e.enabled AND w.next_attempt_at <= ${now}
            AND (w.lease_expires_at IS NULL OR w.lease_expires_at <= ${now})
          ORDER BY w.next_attempt_at
          LIMIT ${limit}
          FOR UPDATE OF w SKIP LOCKED
        ) due, webhook_endpoints e
        WHERE d.id = due.id AND e.id = d.endpoint_id
        RETURNING d.id, d.endpoint_id, e.url, e.secret, e.previous_secret, e.previous_secret_expires_at, d.payload, d.attempts`;
      return rows.map((row) => ({
        id: row.id, endpointId: row.endpoint_id, url: row.url, secret: row.secret, payload: row.payload, attempts: Number(row.attempts),
        previousSecret: row.previous_secret, previousSecretExpiresAt: row.previous_secret_expires_at,
      }));
    },

    async record(owner, id, outcome, at) {
      // Still ours and still pending: a message cancelled meanwhile (410 from a parallel attempt,
      // the endpoint disabled) stays cancelled whatever this attempt's outcome.
      const held = { id, leaseOwner: owner, status: PENDING };
      const common = { attempts: { increment: 1 }, lastAttemptAt: at, leaseOwner: null, leaseExpiresAt: null };
      switch (outcome.status) {
        case 'delivered':
          await prisma.webhookDelivery.updateMany({
            where: held,
            data: { ...common, status: 'delivered', deliveredAt: at, nextAttemptAt: null, lastStatusCode: outcome.statusCode, lastError: null },
          });
          return;
        case 'pending':
        case 'failed':
          await prisma.webhookDelivery.updateMany({
            where: held,
            data: {
              ...common, status: outcome.status, lastStatusCode: outcome.statusCode, lastError: outcome.error.slice(0, 500),
              nextAttemptAt: outcome.status === 'pending' ? outcome.nextAttemptAt : null,
            },
          });
          return;
        case 'gone':
          // 410 Gone: the receiver asks us to stop. Disable the endpoint and cancel what is pending.
          await prisma.$transaction(async (tx) => {
            const { count } = await tx.webhookDelivery.updateMany({
              where: held,
              data: { ...common, status: 'cancelled', nextAttemptAt: null, lastStatusCode: 410, lastError: 'the endpoint answered 410 Gone and was disabled' },
            });
            if (count === 0) return;
            const message = await tx.webhookDelivery.findUniqueOrThrow({ where: { id }, select: { endpointId: true } });
            await tx.webhookEndpoint.update({
              where: { id: message.endpointId },
              data: { enabled: false, disabledReason: `answered 410 Gone at ${at.toISOString()}` },
            });
            await tx.webhookDelivery.updateMany({
              where: { endpointId: message.endpointId, status: PENDING },
              data: { status: 'cancelled', nextAttemptAt: null, lastError: 'endpoint disabled after 410 Gone' },
            });
          });
      }
    },

    async release(owner) {
      const { count } = await prisma.webhookDelivery.updateMany({
        where: { leaseOwner: owner },
        data: { leaseOwner: null, leaseExpiresAt: null },
      });
      return count;
    },

    async nextDue() {
      const [row] = await prisma.$queryRaw<{ due: Date | null }[]>`
        SELECT min(GREATEST(w.next_attempt_at, COALESCE(w.lease_expires_at, w.next_attempt_at))) AS due
        FROM webhook_deliveries w JOIN webhook_endpoints e ON e.id = w.endpoint_id
        WHERE w.status = 'pending' AND e.enabled`;
      return row?.due ? new Date(row.due) : undefined;
    },
  };
}
