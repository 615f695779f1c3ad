/**
 * Presents rows of our `clients` table to oidc-provider as client metadata. Registration
 * happens at /api/register.php, in the spec's shape or RFC 7591's (the provider's own dynamic
 * registration stays off: it would hand us plaintext secrets), so the provider only ever reads
 * clients.
 *
 * `client_secret` carries the stored SHA-256 digest; provider.ts teaches the Client model
 * to compare presented secrets against it. A public client has none.
 */
import type Provider from 'oidc-provider';
import type { ClientMetadata } from 'oidc-provider';
import type { Client } from '../generated/prisma/client.js';
import type { RegisteredMetadata } from '../clients/client-metadata.js';
import { isWellFormedClientId } from '../clients/secret.js';
import type { Adapter, AdapterPayload } from './adapter.js';

/** The RFC 7591 fields that are the provider's client metadata too (`scope` is not: see below). */
const PROVIDER_FIELDS = ['redirect_uris', 'token_endpoint_auth_method', 'grant_types', 'response_types', 'application_type', 'client_uri', 'logo_uri', 'policy_uri', 'tos_uri'] as const;

/**
 * The provider's metadata of an RFC 7591 client. A registered `scope` names resource servers'
 * scopes, which the provider's own `scopes` (the profile's) do not list: it is kept as
 * registered and shown back, not enforced.
 */
export function registeredClientMetadata(clientId: string, clientName: string, secretDigest: string | null, registered: RegisteredMetadata): AdapterPayload {
  const fields = Object.fromEntries(PROVIDER_FIELDS.filter((name) => registered[name] !== undefined).map((name) => [name, registered[name]]));
  return { ...fields, client_id: clientId, client_name: clientName, ...(secretDigest === null ? {} : { client_secret: secretDigest }) };
}

/**
 * The provider's own check of an RFC 7591 client's metadata before it is stored, so that no
 * client is registered that the provider would refuse to load (placeholders stand for the id
 * and the secret's digest, which do not exist yet).
 */
export function checkRegisteredMetadata(provider: Provider): (registered: RegisteredMetadata) => Promise<void> {
  return (registered) => provider.Client.validate(registeredClientMetadata(
    'registering', registered.client_name ?? 'registering', registered.token_endpoint_auth_method === 'none' ? null : '0'.repeat(64), registered,
  ) as ClientMetadata);
}

export function clientMetadata(client: Client): AdapterPayload {
  if (client.registration === 'rfc7591') {
    return registeredClientMetadata(client.clientId, client.clientName, client.clientSecretHash, client.metadata as unknown as RegisteredMetadata);
  }
  const secret = client.clientSecretHash === null ? {} : { client_secret: client.clientSecretHash };
  return {
    client_id: client.clientId,
    ...secret,
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
