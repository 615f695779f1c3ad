/**
 * A user revoking an application (`/api/applications.php`) as webhooks see it: one
 * `token.revoked` (reason `user_revoked`) per grant that ended, written to the outbox in the
 * revocation's own transaction.
 *
 * @example createAuthorizedApps({ prisma, withEvents: revocationAnnouncer(webhooks) });
 */
import type { RevocationTransaction } from '../oidc/authorized-apps.js';
import type { WebhookService } from './webhook-service.js';

export function revocationAnnouncer({ withEvents }: Pick<WebhookService, 'withEvents'>): RevocationTransaction {
  return (change) => withEvents((tx, raise) => change(tx, async ({ clientId, clientName, username, grantIds }) => {
    for (const grantId of grantIds) {
      await raise('token.revoked', {
        client_id: clientId, client_name: clientName, username, grant_id: grantId, token_type: 'grant', reason: 'user_revoked',
      });
    }
  }));
}
