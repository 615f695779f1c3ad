/**
 * Presents rows of our `clients` table to oidc-provider as client metadata. Registration
 * happens at /api/register.php (the provider's own dynamic registration stays off: it
 * compares plaintext secrets), so the provider only ever reads clients.
 *
 * `client_secret` carries the stored SHA-256 digest; provider.ts teaches the Client model
 * to compare presented secrets against it.
 */
import type { Client } from '../generated/prisma/client.js';
import { isWellFormedClientId } from '../clients/secret.js';
import type { Adapter, AdapterPayload } from './adapter.js';

export function clientMetadata(client: Client): AdapterPayload {
  return {
    client_id: client.clientId,
    client_secret: client.clientSecretHash ?? undefined,
    client_name: client.clientName,
    redirect_uris: [client.redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  };
}

function readOnly(): never {
  throw new Error('clients are registered at /api/register.php, not through the provider');
}

export function clientAdapter(find: (clientId: string) => Promise<Client | null>): Adapter {
  return {
    async find(id) {
      if (!isWellFormedClientId(id)) return undefined;
      const client = await find(id);
      return client ? clientMetadata(client) : undefined;
    },
    upsert: readOnly,
    findByUid: readOnly,
    findByUserCode: readOnly,
    consume: readOnly,
    destroy: readOnly,
    revokeByGrantId: readOnly,
  };
}
