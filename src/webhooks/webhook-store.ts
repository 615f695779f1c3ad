/**
 * A client's webhook endpoints and the log of their deliveries. Every query is scoped by
 * client_id, so one client can never see or change another's endpoints.
 *
 * @example const endpoints = await store.list(clientId);
 */
import { randomBytes } from 'node:crypto';
import type { Prisma, PrismaClient, WebhookDelivery, WebhookEndpoint } from '../generated/prisma/client.js';

export type { WebhookDelivery, WebhookEndpoint };

/** Deliveries that have not yet reached a final state (delivered, failed, cancelled). */
export const PENDING = 'pending';

export function newEndpointId(): string {
  return `ep_${randomBytes(16).toString('base64url')}`;
}

export interface WebhookStore {
  list(clientId: string): Promise<WebhookEndpoint[]>;
  find(clientId: string, id: string): Promise<WebhookEndpoint | null>;
  count(clientId: string): Promise<number>;
  /** `writer`: an open transaction to write in (default: on its own). */
  create(endpoint: { clientId: string; url: string; events: string[]; secret: string }, writer?: Prisma.TransactionClient): Promise<WebhookEndpoint>;
  /** False when the client has no such endpoint. Its deliveries go with it. */
  remove(clientId: string, id: string, writer?: Prisma.TransactionClient): Promise<boolean>;
  /** Enables, or disables and cancels what is pending. False when the client has no such endpoint. */
  setEnabled(clientId: string, id: string, enabled: boolean, reason?: string): Promise<boolean>;
  /** The newest deliveries of one endpoint, or of all the client's endpoints. */
  deliveries(clientId: string, options: { endpointId?: string; limit: number }): Promise<(WebhookDelivery & { endpoint: { url: string } })[]>;
}

/**
 * An endpoint as the API and the CLI show it (never its signing secrets). `previous_secret_expires_at`:
 * when the secret replaced by the last rotation stops (or stopped) signing deliveries; null when
 * the secret was never rotated.
 */
export function endpointView(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason,
    created_at: endpoint.createdAt.toISOString(),
    previous_secret_expires_at: endpoint.previousSecretExpiresAt?.toISOString() ?? null,
  };
}

/** Ids are ours (`ep_…`); anything else names nothing and need not reach the database. */
export const isWellFormedEndpointId = (id: string) => /^ep_[\w-]{1,64}$/.test(id);

export function createWebhookStore(prisma: PrismaClient): WebhookStore {
  return {
    list: (clientId) => prisma.webhookEndpoint.findMany({ where: { clientId }, orderBy: { createdAt: 'asc' } }),
    find: async (clientId, id) => (isWellFormedEndpointId(id) ? prisma.webhookEndpoint.findFirst({ where: { clientId, id } }) : null),
    count: (clientId) => prisma.webhookEndpoint.count({ where: { clientId } }),
    create: (endpoint, writer = prisma) => writer.webhookEndpoint.create({ data: { id: newEndpointId(), ...endpoint } }),
    async remove(clientId, id, writer = prisma) {
      if (!isWellFormedEndpointId(id)) return false;
      const { count } = await writer.webhookEndpoint.deleteMany({ where: { clientId, id } });
      return count === 1;
    },
    async setEnabled(clientId, id, enabled, reason) {
      if (!isWellFormedEndpointId(id)) return false;
      return prisma.$transaction(async (tx) => {
        const { count } = await tx.webhookEndpoint.updateMany({
          where: { clientId, id },
          data: { enabled, disabledReason: enabled ? null : (reason ?? 'disabled in the settings') },
        });
        if (count === 1 && !enabled) {
          await tx.webhookDelivery.updateMany({
            where: { endpointId: id, status: PENDING },
            data: { status: 'cancelled', nextAttemptAt: null, lastError: 'endpoint disabled' },
          });
        }
        return count === 1;
      });
    },
    deliveries: (clientId, { endpointId, limit }) => prisma.webhookDelivery.findMany({
      where: { endpoint: { clientId, ...(endpointId ? { id: endpointId } : {}) } },
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
      take: limit,
      include: { endpoint: { select: { url: true } } },
    }),
  };
}
