/**
 * The one check of a presented client secret, wherever a client authenticates (the provider's
 * token, revocation and introspection endpoints; the settings page; the webhooks API): the
 * current secret, or the previous one until its grace ends ({@link matchClientSecret}). Every
 * use of a previous secret is reported: a `warn` line naming the client (never the secret) and
 * when that secret stops working, and a metric by client, so an operator sees who still uses it
 * before its grace ends (docs/rotating-credentials.md).
 *
 * @example const check = createSecretCheck({ clock, logger, counted: metrics.previousSecretUsed }); check(clientId, secret, secretDigests(row));
 */
import type { Logger } from '../ops/logger.js';
import { matchClientSecret } from './secret.js';
import type { SecretDigests } from './secret.js';

/** Whether `presented` authenticates the client; `requestId` names the request on the report line. */
export type SecretCheck = (clientId: string, presented: string, digests: SecretDigests, requestId?: string) => boolean;

export interface SecretCheckDependencies {
  clock: () => Date;
  logger: Pick<Logger, 'warn'>;
  /** Counts a use of a previous secret (the metrics). */
  counted: (clientId: string) => void;
}

export const PREVIOUS_SECRET_USED = 'previous client secret used';

export function createSecretCheck({ clock, logger, counted }: SecretCheckDependencies): SecretCheck {
  return (clientId, presented, digests, requestId) => {
    const match = matchClientSecret(presented, digests, clock());
    if (match === 'previous') {
      counted(clientId);
      logger.warn({ request_id: requestId, client_id: clientId, previous_secret_expires_at: digests.previousUntil?.toISOString() }, PREVIOUS_SECRET_USED);
    }
    return match !== undefined;
  };
}
