/**
 * The settings page's own short session: a signed cookie (the app's cookie keys) holding the
 * client_id, an absolute expiry and a fingerprint of the client's current secret digest. It
 * ends after SESSION_TTL_MS, at sign-out, and whenever the secret is rotated (the fingerprint
 * no longer matches), so a rotation also signs out every other browser.
 *
 * @example const clientId = readSettingsSession(ctx, client => ...);
 */
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { Client } from '../generated/prisma/client.js';

export const SETTINGS_PATH = '/api/settings.php';

/** 15 minutes from sign-in, not extended by use. */
export const SESSION_TTL_MS = 15 * 60 * 1000;

const COOKIE = 'settings_session';

function fingerprint(client: Client): string {
  return createHash('sha256').update(`settings-session\0${client.clientSecretHash}`).digest('base64url').slice(0, 22);
}

function cookieOptions(ctx: Context, expires: Date) {
  return { signed: true, httpOnly: true, sameSite: 'strict', secure: ctx.secure, path: SETTINGS_PATH, expires, overwrite: true } as const;
}

export function startSettingsSession(ctx: Context, client: Client, now: Date): void {
  const expires = new Date(now.getTime() + SESSION_TTL_MS);
  const value = Buffer.from(JSON.stringify({ c: client.clientId, e: expires.getTime(), f: fingerprint(client) })).toString('base64url');
  ctx.cookies.set(COOKIE, value, cookieOptions(ctx, expires));
}

export function endSettingsSession(ctx: Context): void {
  ctx.cookies.set(COOKIE, null, cookieOptions(ctx, new Date(0)));
}

/**
 * The signed-in client, or undefined (no cookie, expired, or the secret has changed since).
 * `find` loads the client named by the cookie.
 */
export async function readSettingsSession(ctx: Context, find: (clientId: string) => Promise<Client | null>, now: Date): Promise<Client | undefined> {
  const raw = ctx.cookies.get(COOKIE, { signed: true });
  if (!raw) return undefined;
  let session: { c?: unknown; e?: unknown; f?: unknown };
  try {
    session = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as typeof session;
  } catch {
    return undefined;
  }
  if (typeof session.c !== 'string' || typeof session.e !== 'number' || session.e <= now.getTime()) return undefined;
  const client = await find(session.c);
  return client && fingerprint(client) === session.f ? client : undefined;
}
