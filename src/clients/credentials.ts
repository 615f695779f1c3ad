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
 * (docs/rotating-credentials.md): {@link matchClientSecret}, but only where a client uses OAuth
 * (token, revocation, introspection). Managing a client (the settings page, the webhooks API)
 * takes its current secret alone: a leaked old secret must not rotate the new one away. Every
 * use of a previous secret is reported ({@link createSecretCheck}): a `warn` line naming the
 * client (never the secret) and when that secret stops working, and a metric by client, so an
 * operator sees who still uses it.
 *
 * A client without a secret (a public client: RFC 7591 `none`, a metadata document) has no
 * secret anywhere: nothing presented authenticates it (docs/security.md, who may do what).
 *
 * @see RFC 6749 §2.3.1
 * @example const check = createSecretCheck({ logger, counted: metrics.previousSecretUsed }); check(clientId, secret, secretDigests(row));
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { inGrace } from './secret-grace.js';
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

/**
 * Which secrets a surface accepts: `oauth` (token, revocation, introspection) the current one and
 * the previous one in its grace; `manage` (the settings page, the webhooks API) the current one only.
 */
export type SecretUse = 'oauth' | 'manage';

/** Whether `presented` authenticates the client for `use`; `requestId` names the request on the report line. */
export type SecretCheck = (clientId: string, presented: string, digests: SecretDigests, requestId?: string, use?: SecretUse) => boolean;

export interface SecretCheckDependencies {
  /** The time a grace is judged at (default: now). */
  clock?: () => Date;
  logger: Pick<Logger, 'warn'>;
  /** Counts a use of a previous secret (the metrics). */
  counted: (clientId: string) => void;
}

export const PREVIOUS_SECRET_USED = 'previous client secret used';
export const PREVIOUS_SECRET_REFUSED = 'previous client secret refused: managing a client takes its current secret';

export function createSecretCheck({ clock = () => new Date(), logger, counted }: SecretCheckDependencies): SecretCheck {
  return (clientId, presented, digests, requestId, use = 'oauth') => {
    const match = matchClientSecret(presented, digests, clock());
    if (match === 'previous') {
      const line = { request_id: requestId, client_id: clientId, previous_secret_expires_at: digests.previousUntil?.toISOString() };
      if (use === 'manage') {
        logger.warn(line, PREVIOUS_SECRET_REFUSED);
        return false;
      }
      counted(clientId);
      logger.warn(line, PREVIOUS_SECRET_USED);
    }
    return match !== undefined;
  };
}

/**
 * What an unknown client, or a client without a secret, is compared with: a digest made at random
 * when the process starts, so that no text, in the source or anywhere, matches it, and the
 * refusal costs the same comparisons as a wrong secret.
 */
export const DECOY: SecretDigests = { current: hashClientSecret(randomBytes(32).toString('base64url')) };

/**
 * A client's secret check for our own pages and APIs, which manage the client: the client, or null
 * when the id is unknown, the client has no secret (it is public), or the secret is not its
 * current one. Every refusal costs the same digest comparisons.
 */
export async function authenticateClient(
  find: (clientId: string) => Promise<Client | null>,
  check: SecretCheck,
  credentials: { clientId: string; clientSecret: string; requestId?: string | undefined },
): Promise<Client | null> {
  const { clientId, clientSecret } = credentials;
  const client = isWellFormedClientId(clientId) ? await find(clientId) : null;
  const secret = client?.clientSecretHash ?? null;
  const digests = client && secret !== null ? secretDigests({ ...client, clientSecretHash: secret }) : DECOY;
  const ok = check(clientId, clientSecret, digests, credentials.requestId, 'manage');
  // A public client is compared with the decoy too, and refused whatever the comparison said.
  return client && secret !== null && ok ? client : null;
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
