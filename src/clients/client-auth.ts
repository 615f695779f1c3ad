/**
 * Client authentication for our own endpoints (the settings page and API): client_id and
 * client_secret, as at the token endpoint. An unknown client costs the same digest
 * comparison as a wrong secret.
 *
 * @see RFC 6749 §2.3.1
 */
import type { Client } from '../generated/prisma/client.js';
import { hashClientSecret, isWellFormedClientId, verifyClientSecret } from './secret.js';

const DECOY_DIGEST = hashClientSecret('decoy: no client has this secret');

/** The client, or null when the id is unknown or the secret wrong. */
export async function authenticateClient(
  find: (clientId: string) => Promise<Client | null>,
  clientId: string,
  clientSecret: string,
): Promise<Client | null> {
  const client = isWellFormedClientId(clientId) ? await find(clientId) : null;
  const ok = verifyClientSecret(clientSecret, client?.clientSecretHash ?? DECOY_DIGEST);
  return client && ok ? client : null;
}

/**
 * `Authorization: Basic base64(client_id:client_secret)`, each part form-urlencoded first
 * (RFC 6749 §2.3.1). Undefined when the header is absent or malformed.
 */
export function basicCredentials(header: string | undefined): { clientId: string; clientSecret: string } | undefined {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header?.trim() ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    const unescape = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
    return { clientId: unescape(decoded.slice(0, colon)), clientSecret: unescape(decoded.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}
