/**
 * Client secrets: 256 random bits, stored only as a SHA-256 digest.
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

/** Constant-time comparison of a presented secret with a stored digest. */
export function verifyClientSecret(presented: string, storedHash: string): boolean {
  const presentedHash = Buffer.from(hashClientSecret(presented), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return stored.length === presentedHash.length && timingSafeEqual(presentedHash, stored);
}
