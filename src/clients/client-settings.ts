/**
 * What a client changes in its settings: name, redirect URI (validated as at registration)
 * and secret. Each change and its webhook event (`client.updated`, `client.secret_rotated`)
 * are written in one transaction: there is no change without its event, nor the reverse.
 *
 * @example const { clientSecret } = await settings.rotateSecret(clientId);
 */
import type { Client } from '../generated/prisma/client.js';
import type { WebhookService } from '../webhooks/webhook-service.js';
import { ClientInputError, validName, validRedirectUri } from './client-store.js';
import { generateClientSecret, hashClientSecret } from './secret.js';

export interface ClientSettings {
  /** Applies the fields given; raises `client.updated` naming what changed (nothing: no event). */
  update(clientId: string, input: { clientName?: unknown; redirectUri?: unknown }): Promise<{ client: Client; changed: string[] }>;
  /** A new secret, returned this once; the old one stops working at once. */
  rotateSecret(clientId: string): Promise<{ client: Client; clientSecret: string }>;
}

export function createClientSettings({ withEvents }: Pick<WebhookService, 'withEvents'>): ClientSettings {
  return {
    update(clientId, input) {
      const clientName = input.clientName === undefined ? undefined : validName(input.clientName);
      const redirectUri = input.redirectUri === undefined ? undefined : validRedirectUri(input.redirectUri);
      return withEvents(async (tx, raise) => {
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
        await raise('client.updated', {
          client_id: clientId, client_name: client.clientName, redirect_uri: client.redirectUri, changed,
        });
        return { client, changed };
      });
    },
    rotateSecret(clientId) {
      const clientSecret = generateClientSecret();
      return withEvents(async (tx, raise) => {
        const client = await tx.client.update({ where: { clientId }, data: { clientSecretHash: hashClientSecret(clientSecret) } });
        await raise('client.secret_rotated', { client_id: clientId, client_name: client.clientName });
        return { client, clientSecret };
      });
    },
  };
}
