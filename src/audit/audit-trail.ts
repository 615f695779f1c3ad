/**
 * Reading the audit trail (the CLI's `audit:list`): newest first, filtered by user, client,
 * event names and time. Each filter has its index: `created_at`, (`user_id`, `created_at`),
 * (`client_id`, `created_at`).
 *
 * @example const rows = await readAuditTrail(prisma, { userId, since: new Date(Date.now() - 86_400_000), limit: 100 });
 */
import type { AuditEvent, PrismaClient } from '../generated/prisma/client.js';
import type { AuditEventName } from './audit-events.js';

export type { AuditEvent };

export interface AuditQuery {
  userId?: string | undefined;
  clientId?: string | undefined;
  /** Any of these names (none given: every event). */
  events?: readonly AuditEventName[] | undefined;
  since?: Date | undefined;
  limit: number;
}

export function readAuditTrail(prisma: PrismaClient, query: AuditQuery): Promise<AuditEvent[]> {
  return prisma.auditEvent.findMany({
    where: {
      ...(query.userId === undefined ? {} : { userId: query.userId }),
      ...(query.clientId === undefined ? {} : { clientId: query.clientId }),
      ...(query.events?.length ? { event: { in: [...query.events] } } : {}),
      ...(query.since === undefined ? {} : { createdAt: { gte: query.since } }),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: query.limit,
  });
}
