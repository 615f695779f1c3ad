/**
 * A client described by its metadata (RFC 7591, or an operator's: clients/client-metadata.ts) as
 * the provider's client metadata: its metadata as registered, beside the id, name and secret
 * digests every client row gives (adapter.ts). A registered `scope` names resource servers'
 * scopes, which the provider's own `scopes` (the profile's) do not list: it is kept as registered
 * and shown back, not enforced. A `jwks_uri` is replaced by the keys it holds (adapter.ts).
 */
import type Provider from 'oidc-provider';
import type { AdapterPayload, ClientMetadata } from 'oidc-provider';
import { usesSecret } from '../clients/client-metadata.js';
import type { RegisteredMetadata } from '../clients/client-metadata.js';

/** The RFC 7591 fields that are the provider's client metadata too. */
const PROVIDER_FIELDS = [
  'redirect_uris', 'token_endpoint_auth_method', 'grant_types', 'response_types', 'application_type', 'client_uri', 'logo_uri', 'policy_uri', 'tos_uri',
  'jwks', 'jwks_uri', 'token_endpoint_auth_signing_alg', 'post_logout_redirect_uris', 'backchannel_logout_uri',
] as const;

export function registeredClientMetadata(registered: RegisteredMetadata): AdapterPayload {
  return Object.fromEntries(PROVIDER_FIELDS.filter((name) => registered[name] !== undefined).map((name) => [name, registered[name]]));
}

/**
 * The provider's own check of an RFC 7591 client's metadata before it is stored, so that no
 * client is registered that the provider would refuse to load (placeholders stand for the id
 * and the secret's digest, which do not exist yet).
 */
export function checkRegisteredMetadata(provider: Provider): (registered: RegisteredMetadata) => Promise<void> {
  return (registered) => provider.Client.validate({
    ...registeredClientMetadata(registered),
    client_id: 'registering',
    client_name: registered.client_name ?? 'registering',
    ...(usesSecret(registered.token_endpoint_auth_method) ? { client_secret: '0'.repeat(64) } : {}),
  } as ClientMetadata);
}
