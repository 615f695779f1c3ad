/**
 * The tokens of mailed links (password reset, address verification). A token is 32 random bytes
 * (base64url); only its SHA-256 digest is stored, so the table alone opens nothing. Each is
 * single-use, lives until its `expires_at`, and holds only while the user's address is still the
 * one it was mailed to. Using one is one conditional update (`used_at IS NULL AND expires_at >
 * now`), so two requests racing with one link cannot both get through.
 *
 * @example const token = await issueToken(tx, user, 'password_reset', ttlMs, now);
 *          const used = await useToken(tx, token, 'password_reset', new Date());
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Prisma } from '../generated/prisma/client.js';

export type LinkPurpose = 'password_reset' | 'email_verification';

/** Why a link was refused: for the audit trail; the person is shown one page for all three. */
export type LinkRefusal = 'unknown' | 'used' | 'expired';

export type TokenWriter = Pick<Prisma.TransactionClient, 'accountToken' | 'user'>;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const tokenDigest = (token: string) => createHash('sha256').update(token).digest('base64url');

/** A new token for `user`'s link, its digest stored; the token itself only goes into the mail. */
export async function issueToken(writer: TokenWriter, user: { id: string; email: string }, purpose: LinkPurpose, ttlMs: number, now: Date): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await writer.accountToken.create({ data: { digest: tokenDigest(token), purpose, userId: user.id, email: user.email, createdAt: now, expiresAt: new Date(now.getTime() + ttlMs) } });
  return token;
}

export type TokenCheck = { readonly userId: string } | { readonly refused: LinkRefusal; readonly userId?: string };

/** What `token` is worth now, without using it (the reset page shows its form only for a live link). */
export async function checkToken(writer: TokenWriter, token: string, purpose: LinkPurpose, now: Date): Promise<TokenCheck> {
  if (!TOKEN.test(token)) return { refused: 'unknown' };
  const row = await writer.accountToken.findUnique({ where: { digest: tokenDigest(token) }, include: { user: { select: { email: true } } } });
  if (!row || row.purpose !== purpose) return { refused: 'unknown' };
  if (row.usedAt) return { refused: 'used', userId: row.userId };
  // An address changed since the mail: the link was for the old one.
  if (row.expiresAt <= now || row.user.email !== row.email) return { refused: 'expired', userId: row.userId };
  return { userId: row.userId };
}

/** Uses `token` once: resolves its user, or why it is refused (then nothing changed). */
export async function useToken(writer: TokenWriter, token: string, purpose: LinkPurpose, now: Date): Promise<TokenCheck> {
  const check = await checkToken(writer, token, purpose, now);
  if ('refused' in check) return check;
  const { count } = await writer.accountToken.updateMany({ where: { digest: tokenDigest(token), purpose, usedAt: null, expiresAt: { gt: now } }, data: { usedAt: now } });
  return count === 1 ? check : { refused: 'used', userId: check.userId };
}

/** Uses up every other live link of `purpose` of the user (a password reset makes the others worthless). */
export async function useAllTokens(writer: TokenWriter, userId: string, purpose: LinkPurpose, now: Date): Promise<void> {
  await writer.accountToken.updateMany({ where: { userId, purpose, usedAt: null }, data: { usedAt: now } });
}
