/**
 * What changes about a client after registration: name, redirect URI (validated as at
 * registration) and secret, from its settings page or from an operator's CLI. Each change, its
 * webhook event (`client.updated`, `client.secret_rotated`) and its audit row (the same names)
 * are written in one transaction: there is no change without its event and row, nor the reverse.
 *
 * @example const { clientSecret } = await settings.rotateSecret(clientId, requestContext(ctx, clientActor(clientId)));
 */
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../webhooks/audited-changes.js';
import type { Client } from '../generated/prisma/client.js';
import { ClientInputError, validName, validRedirectUri } from './client-store.js';
import { generateClientSecret, hashClientSecret } from './secret.js';

export interface ClientSettings {
  /** Applies the fields given; raises `client.updated` naming what changed (nothing: no event). */
  update(clientId: string, input: { clientName?: unknown; redirectUri?: unknown }, context: AuditContext): Promise<{ client: Client; changed: string[] }>;
  /** A new secret, returned this once; the old one stops working at once. */
  rotateSecret(clientId: string, context: AuditContext): Promise<{ client: Client; clientSecret: string }>;
}

export function createClientSettings(changes: ChangeTransaction): ClientSettings {
  return {
    update(clientId, input, context) {
      const clientName = input.clientName === undefined ? undefined : validName(input.clientName);
      const redirectUri = input.redirectUri === undefined ? undefined : validRedirectUri(input.redirectUri);
      return changes(async (tx, raise, audit) => {
        const before = await tx.client.findUnique({ where: { clientId } });
        if (!before) throw new ClientInputError('the application is no longer registered');
        const changed = [
          ...(clientName !== undefined && clientName !== before.clientName ? ['client_name'] : []),
          ...(redirectUri !== undefined && redirectUri !== before.redirectUri ? ['redirect_uri'] : []),
        ];
        if (changed.length === 0) return { client: before, changed };
        const client = await tx.client.update({
          where: { clientId },
          data: { ...(clientName !== undefined ? { clientName } : {}), ...(redirectUri !== undefined ? { redirectUri } : {}) },
        });
        const values = { client_id: clientId, client_name: client.clientName, redirect_uri: client.redirectUri, changed };
        await raise('client.updated', values);
        await audit('client.updated', { client: clientId, detail: values }, context);
        return { client, changed };
      });
    },
    rotateSecret(clientId, context) {
      const clientSecret = generateClientSecret();
      return changes(async (tx, raise, audit) => {
        const client = await tx.client.update({ where: { clientId }, data: { clientSecretHash: hashClientSecret(clientSecret) } });
        await raise('client.secret_rotated', { client_id: clientId, client_name: client.clientName });
        await audit('client.secret_rotated', { client: clientId, detail: { client_name: client.clientName } }, context);
        return { client, clientSecret };
      });
    },
  };
}
