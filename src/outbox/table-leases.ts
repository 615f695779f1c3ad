/**
 * The two lease queries an outbox table answers alike, for a table whose rows carry `status`,
 * `next_attempt_at` and a lease (`lease_owner`, `lease_expires_at`): giving back what an owner
 * holds, and when the next pending row becomes claimable. Each outbox claims in its own way.
 *
 * @example const outbox = { claim, ...tableLeases(prisma, 'mail_outbox') };
 */
import { Prisma } from '../generated/prisma/client.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Leases } from './worker.js';

export function tableLeases(prisma: Pick<PrismaClient, '$executeRaw' | '$queryRaw'>, table: 'mail_outbox' | 'backchannel_logouts'): Pick<Leases<never>, 'release' | 'nextDue'> {
  const from = Prisma.raw(`"${table}"`);
  return {
    release: (owner) => prisma.$executeRaw`UPDATE ${from} SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ${owner}`,
    async nextDue() {
      const [row] = await prisma.$queryRaw<{ due: Date | null }[]>`
        SELECT min(GREATEST(next_attempt_at, COALESCE(lease_expires_at, next_attempt_at))) AS due
        FROM ${from} WHERE status = 'pending'`;
      return row?.due ? new Date(row.due) : undefined;
    },
  };
}
