/**
 * The cleanup job's sweep of self-registered clients left unused for DYNAMIC_CLIENT_IDLE_DAYS:
 * an RFC 7591 client that obtained no token for that long (counted from its registration when it
 * never did), and a client that registered itself in the spec's shape and never obtained a token
 * at all since (whatever door registered it, open or locked). Each is deleted with a
 * `client.deleted` audit row (actor `system`, reason `idle`) in one transaction. A spec-shape
 * client that was used once is kept (its users may come back), and an operator's client
 * (`clients:create`) is never removed. Their grants and tokens, useless without the client,
 * expire as every token does; their webhook endpoints retire as a deleted client's do.
 *
 * Bounded as the other sweeps (store/cleanup.ts): at most `limit` clients a batch, and never more
 * than {@link IDLE_CLIENTS_PER_BATCH} (each has its audit row in the batch's one transaction),
 * longest idle first (the partial indexes clients_idle_idx and clients_never_used_idx),
 * `FOR UPDATE SKIP LOCKED` so instances never collide.
 *
 * @example await deleteIdleClients(records.change, { days: 30, limit: 100 });
 */
import { SYSTEM } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';

export const IDLE_CLIENTS_PER_BATCH = 100;

interface Removed { client_id: string; client_name: string; last_used: Date }

/** One batch; resolves to the number of clients removed. */
export function deleteIdleClients(changes: ChangeTransaction, { days, limit }: { days: number; limit: number }): Promise<number> {
  return changes(async (tx, record) => {
    const removed = await tx.$queryRaw<Removed[]>`
      DELETE FROM clients c WHERE c.client_id IN (
        SELECT client_id FROM clients
        WHERE (registration = 'rfc7591' AND COALESCE(last_used_at, created_at) < now() - make_interval(days => ${days}::int))
           OR (registration = 'spec' AND last_used_at IS NULL AND created_at < now() - make_interval(days => ${days}::int))
        ORDER BY COALESCE(last_used_at, created_at)
        LIMIT ${Math.min(limit, IDLE_CLIENTS_PER_BATCH)}
        FOR UPDATE SKIP LOCKED)
      RETURNING c.client_id, c.client_name, COALESCE(c.last_used_at, c.created_at) AS last_used`;
    for (const client of removed) {
      const detail = { client_name: client.client_name, reason: 'idle', idle_days: days, last_used_at: client.last_used.toISOString() };
      await record.audit('client.deleted', { client: client.client_id, detail }, { actor: SYSTEM });
    }
    return removed.length;
  });
}
