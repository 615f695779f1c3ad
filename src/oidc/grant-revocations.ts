/**
 * Grants ended on someone's behalf, as the client's webhooks and the audit trail see them: one
 * `token.revoked` event per ended grant (with the reason) and one `token.revoked` audit row per
 * user and client, written in the revocation's own transaction. A user revoking an application
 * on /api/applications.php (`user_revoked`) and an operator (`admin_revoked`: tokens:revoke, a
 * user disabled or deleted) go through here.
 *
 * @example createAuthorizedApps({ prisma, withEvents: revocationAnnouncer(changes) });
 */
import type { AuditContext, AuditFields } from '../audit/audit-log.js';
import type { ChangeTransaction, Recorder } from '../audit/records.js';
import type { RevocationReason } from '../webhooks/events.js';
import type { Writer } from '../webhooks/outbox.js';
import { endGrants } from './authorized-apps.js';
import type { ApplicationRevoked, GrantScope, RevocationTransaction } from './authorized-apps.js';

/** The audit row of grants ended for one user and one client. */
export function revokedFields({ clientId, accountId, username, grantIds }: ApplicationRevoked, reason: RevocationReason): AuditFields {
  return { user: accountId, client: clientId, detail: { reason, token_type: 'grant', grant_ids: grantIds, ...(username ? { username } : {}) } };
}

/** Raises and audits what `endGrants` ended, in the caller's transaction. */
export async function announceRevocations(record: Recorder, ended: ApplicationRevoked[], reason: RevocationReason, context: AuditContext): Promise<void> {
  for (const revoked of ended) {
    const { clientId, clientName, username, grantIds } = revoked;
    for (const grantId of grantIds) {
      await record.event('token.revoked', { client_id: clientId, client_name: clientName, username, grant_id: grantId, token_type: 'grant', reason });
    }
    await record.audit('token.revoked', revokedFields(revoked, reason), context);
  }
}

/** Ends the grants in `scope` (an operator's doing) and announces them, in the caller's transaction. */
export async function revokeGrants(tx: Writer, record: Recorder, scope: GrantScope, context: AuditContext): Promise<ApplicationRevoked[]> {
  const ended = await endGrants(tx, scope);
  await announceRevocations(record, ended, 'admin_revoked', context);
  return ended;
}

/** A user revoking an application (`user_revoked`), in one transaction with its events and audit row. */
export function revocationAnnouncer(changes: ChangeTransaction): RevocationTransaction {
  return (change) => changes((tx, record) => change(tx, (event, context) => announceRevocations(record, [event], 'user_revoked', context)));
}
