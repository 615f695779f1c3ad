/**
 * Client authentication for our own endpoints (the settings page and API): client_id and
 * client_secret, as at the token endpoint, with the same check (the previous secret works
 * until its grace ends: secret-check.ts). An unknown client costs the same digest comparisons
 * as a wrong secret.
 *
 * @see RFC 6749 §2.3.1
 */
import type { Client } from '../generated/prisma/client.js';
import type { SecretCheck } from './secret-check.js';
import { hashClientSecret, isWellFormedClientId, secretDigests } from './secret.js';

const DECOY = { current: hashClientSecret('decoy: no client has this secret') };

/** The client, or null when the id is unknown or the secret wrong. */
export async function authenticateClient(
  find: (clientId: string) => Promise<Client | null>,
  check: SecretCheck,
  credentials: { clientId: string; clientSecret: string; requestId?: string | undefined },
): Promise<Client | null> {
  const { clientId, clientSecret } = credentials;
  const client = isWellFormedClientId(clientId) ? await find(clientId) : null;
  const ok = check(clientId, clientSecret, client ? secretDigests(client) : DECOY, credentials.requestId);
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
