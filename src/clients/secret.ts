/**
 * Client secrets: 256 random bits, stored only as a SHA-256 digest. After a rotation the
 * previous secret is accepted too until its grace ends (docs/rotating-credentials.md): one rule,
 * {@link matchClientSecret}, wherever a client authenticates.
 *
 * A slow password KDF (argon2, bcrypt) defends low-entropy human passwords against guessing;
 * a 256-bit random secret cannot be guessed, so a fast digest is just as safe here and keeps
 * the token endpoint from spending ~20-200 ms of CPU per request on hashing.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

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
  const inGrace = digests.previousUntil !== null && digests.previousUntil !== undefined && now.getTime() < digests.previousUntil.getTime();
  return previous && inGrace && digests.previous ? 'previous' : undefined;
}
