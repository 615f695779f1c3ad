/**
 * A client's secrets as the provider sees them. `client_secret` carries the stored SHA-256
 * digest (clients/secret.ts says why); after a rotation, the previous secret's digest and the end
 * of its grace come along as two metadata properties of our own, registered as the provider's
 * `extraClientMetadata`, so they are part of the Client it builds, and of its cache key: a
 * rotation or an early end is a new Client on every instance at its next request.
 * provider.ts's `compareClientSecret` reads them back with {@link metadataDigests}.
 *
 * @example const metadata = { client_id, ...secretMetadata(row), … };
 */
import type { Client } from '../generated/prisma/client.js';
import type { SecretDigests } from '../clients/secret.js';

/** The previous secret's digest, and when its grace ends (seconds since the epoch, as RFC 7591's `client_secret_expires_at`). */
export const PREVIOUS_SECRET_METADATA = ['previous_client_secret', 'previous_client_secret_expires_at'] as const;

/** `client_secret`, and the previous secret while the row keeps one. */
export function secretMetadata(client: Client): Record<string, string | number> {
  const until = client.previousSecretExpiresAt;
  return client.previousSecretHash && until
    ? { client_secret: client.clientSecretHash, previous_client_secret: client.previousSecretHash, previous_client_secret_expires_at: Math.ceil(until.getTime() / 1000) }
    : { client_secret: client.clientSecretHash };
}

/** The digests of a provider Client built from {@link secretMetadata}. */
export function metadataDigests(client: { clientSecret: string; previous_client_secret?: unknown; previous_client_secret_expires_at?: unknown }): SecretDigests {
  const until = client.previous_client_secret_expires_at;
  return {
    current: client.clientSecret,
    previous: typeof client.previous_client_secret === 'string' ? client.previous_client_secret : null,
    previousUntil: typeof until === 'number' ? new Date(until * 1000) : null,
  };
}
