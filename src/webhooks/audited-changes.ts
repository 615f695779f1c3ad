/**
 * A change as one transaction with everything that records it: the webhook events it raises
 * (outbox rows) and its audit rows. Nothing is announced or audited that did not happen, and
 * nothing that happened goes unannounced; the audit lines are logged once it committed.
 *
 * @example await changes(async (tx, raise, audit) => { await tx.client.update(…); await raise('client.updated', …); await audit('client.updated', …); });
 */
import type { AuditEventName } from '../audit/audit-events.js';
import type { AuditContext, AuditFields, AuditLog } from '../audit/audit-log.js';
import type { Writer } from './outbox.js';
import type { Raise, WebhookService } from './webhook-service.js';

/** Writes an audit row in the change's transaction. */
export type Audit = (event: AuditEventName, fields: AuditFields, context: AuditContext) => Promise<void>;

export type ChangeTransaction = <T>(change: (tx: Writer, raise: Raise, audit: Audit) => Promise<T>) => Promise<T>;

/** `timeoutMs`: how long one change may take (Prisma's 5 s unless given; the CLI gives ADMIN_TRANSACTION_TIMEOUT_MS). */
export function auditedChanges(webhooks: Pick<WebhookService, 'withEvents'>, audit: AuditLog, options: { timeoutMs?: number } = {}): ChangeTransaction {
  return (change) => audit.within((write) => webhooks.withEvents((tx, raise) => change(tx, raise, (event, fields, context) => write(tx, event, fields, context)), options));
}
