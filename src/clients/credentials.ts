/**
 * Client credentials: ids and secrets, and the one check of a presented secret, wherever a client
 * authenticates (the provider's token, revocation and introspection endpoints; the settings page;
 * the webhooks API).
 *
 * Secrets are 256 random bits, stored only as a SHA-256 digest. A slow password KDF (argon2,
 * bcrypt) defends low-entropy human passwords against guessing; a 256-bit random secret cannot be
 * guessed, so a fast digest is just as safe here and keeps the token endpoint from hashing for
 * tens of milliseconds a request.
 *
 * After a rotation the previous secret is accepted too until its grace ends
 * (docs/rotating-credentials.md): {@link matchClientSecret}. Every use of a previous secret is
 * reported ({@link createSecretCheck}): a `warn` line naming the client (never the secret) and
 * when that secret stops working, and a metric by client, so an operator sees who still uses it.
 *
 * @see RFC 6749 §2.3.1
 * @example const check = createSecretCheck({ logger, counted: metrics.previousSecretUsed }); check(clientId, secret, secretDigests(row));
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { inGrace } from '../config/durations.js';
import type { Client } from '../generated/prisma/client.js';
import type { Logger } from '../ops/logger.js';

export function generateClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function generateClientId(): string {
  return randomBytes(16).toString('base64url');
}

/** Issued ids are base64url; anything else cannot name a client and need not reach the database. */
export function isWellFormedClientId(value: string): boolean {
  return /^[\w-]{1,128}$/.test(value);
}

export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented secret's digest with a stored digest. */
function sameDigest(presentedHash: Buffer, storedHash: string): boolean {
  const stored = Buffer.from(storedHash, 'hex');
  return stored.length === presentedHash.length && timingSafeEqual(presentedHash, stored);
}

/** Constant-time comparison of a presented secret with a stored digest. */
export function verifyClientSecret(presented: string, storedHash: string): boolean {
  return sameDigest(Buffer.from(hashClientSecret(presented), 'hex'), storedHash);
}

/** The digests a client may authenticate with: its secret's, and its previous secret's until `previousUntil`. */
export interface SecretDigests {
  readonly current: string;
  readonly previous?: string | null | undefined;
  readonly previousUntil?: Date | null | undefined;
}

/** A client row's {@link SecretDigests}. */
export function secretDigests(client: { clientSecretHash: string; previousSecretHash: string | null; previousSecretExpiresAt: Date | null }): SecretDigests {
  return { current: client.clientSecretHash, previous: client.previousSecretHash, previousUntil: client.previousSecretExpiresAt };
}

/** A digest no secret has, compared in place of an absent previous one. */
const NO_DIGEST = '0'.repeat(64);

/**
 * Which of the client's secrets `presented` is: `current`, `previous` (only before its grace
 * ends at `previousUntil`), or undefined. Both digests are compared every time, in constant
 * time, so the answer's timing tells nothing of which matched or whether there is a previous one.
 */
export function matchClientSecret(presented: string, digests: SecretDigests, now: Date): 'current' | 'previous' | undefined {
  const presentedHash = Buffer.from(hashClientSecret(presented), 'hex');
  const current = sameDigest(presentedHash, digests.current);
  const previous = sameDigest(presentedHash, digests.previous ?? NO_DIGEST);
  if (current) return 'current';
  return previous && inGrace(digests.previous, digests.previousUntil, now) ? 'previous' : undefined;
}

/** Whether `presented` authenticates the client; `requestId` names the request on the report line. */
export type SecretCheck = (clientId: string, presented: string, digests: SecretDigests, requestId?: string) => boolean;

export interface SecretCheckDependencies {
  /** The time a grace is judged at (default: now). */
  clock?: () => Date;
  logger: Pick<Logger, 'warn'>;
  /** Counts a use of a previous secret (the metrics). */
  counted: (clientId: string) => void;
}

export const PREVIOUS_SECRET_USED = 'previous client secret used';

export function createSecretCheck({ clock = () => new Date(), logger, counted }: SecretCheckDependencies): SecretCheck {
  return (clientId, presented, digests, requestId) => {
    const match = matchClientSecret(presented, digests, clock());
    if (match === 'previous') {
      counted(clientId);
      logger.warn({ request_id: requestId, client_id: clientId, previous_secret_expires_at: digests.previousUntil?.toISOString() }, PREVIOUS_SECRET_USED);
    }
    return match !== undefined;
  };
}

/** A client's secret check for our own endpoints: the client, or null when the id is unknown or the secret wrong. An unknown client costs the same digest comparisons as a wrong secret. */
const DECOY = { current: hashClientSecret('decoy: no client has this secret') };

export async function authenticateClient(
  find: (clientId: string) => Promise<Client | null>,
  check: SecretCheck,
  credentials: { clientId: string; clientSecret: string; requestId?: string | undefined },
): Promise<Client | null> {
  const { clientId, clientSecret } = credentials;
  const client = isWellFormedClientId(clientId) ? await find(clientId) : null;
  // A public client (RFC 7591 `none`) has no secret: it is compared with the decoy, and never matches.
  const secret = client?.clientSecretHash;
  const ok = check(clientId, clientSecret, client && secret ? secretDigests({ ...client, clientSecretHash: secret }) : DECOY, credentials.requestId);
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
