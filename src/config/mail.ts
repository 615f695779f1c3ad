/**
 * Mail (docs/accounts.md, docs/configuration.md "Mail"): where the service's mails go and how long
 * their links live. With `SMTP_URL` mails go to that SMTP server. Without it, the embedded default
 * (no `DATABASE_URL`) writes each mail to the log, and says so at start-up; a deployment with a
 * database of its own has mail off, and password reset and address verification say so.
 *
 * @example const { mail } = loadConfig(process.env); if (mail.mode === 'off') …
 */
import { parseGrace } from './durations.js';
import { ConfigError, integer, read, url } from './env.js';
import type { Env } from './env.js';

export type MailMode = 'smtp' | 'log' | 'off';

export interface MailConfig {
  /** `smtp`: SMTP_URL is set; `log`: embedded default without it; `off`: a database of its own, no SMTP_URL. */
  readonly mode: MailMode;
  /** SMTP_URL: `smtp://` (STARTTLS when offered) or `smtps://`, with user and password if the server asks. */
  readonly smtpUrl: string | undefined;
  /** MAIL_FROM: the mails' From, an address or `Name <address>`; default `no-reply@` BASE_URL's host. */
  readonly from: string;
  /** PASSWORD_RESET_TTL: how long a reset link works (default 30 minutes). */
  readonly passwordResetTtlMs: number;
  /** EMAIL_VERIFICATION_TTL: how long a verification link works (default 24 hours). */
  readonly emailVerificationTtlMs: number;
  /** MAIL_RETRY_BASE_MS: the first retry of a mail the server did not take; later ones double (the webhooks' schedule). */
  readonly retryBaseMs: number;
  /** MAIL_TIMEOUT_MS: one attempt's connect, greeting and each reply of the server. */
  readonly timeoutMs: number;
}

const ADDRESS = /^[^\s@<>",;]{1,64}@[^\s@<>",;]+\.[^\s@<>",;]+$/;

function from(env: Env, baseUrl: string): string {
  const given = read(env, 'MAIL_FROM');
  if (given === undefined) return `no-reply@${new URL(baseUrl).hostname}`;
  const raw = given;
  const named = /^([^<>\r\n]*)<([^<>]+)>$/.exec(raw.trim());
  const address = named ? named[2]!.trim() : raw.trim();
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw) || !ADDRESS.test(address)) {
    throw new ConfigError('MAIL_FROM', `must be an e-mail address or "Name <address>", got "${raw}"`);
  }
  return raw.trim();
}

/** A link's lifetime: a duration (`30m`, `2h`, `1d`) from a minute to `maxMs`. */
function lifetime(env: Env, name: string, fallback: string, maxMs: number, maxText: string): number {
  const raw = read(env, name) ?? fallback;
  const ms = parseGrace(raw);
  if (ms === undefined || ms < 60_000 || ms > maxMs) throw new ConfigError(name, `must be a duration such as 15m, 30m or 2h, from 1m to ${maxText}, got "${raw}"`);
  return ms;
}

export function mailConfig(env: Env, baseUrl: string, databaseUrl: string | undefined): MailConfig {
  const smtpUrl = url(env, 'SMTP_URL', ['smtp:', 'smtps:']);
  return Object.freeze({
    mode: smtpUrl ? 'smtp' : databaseUrl ? 'off' : 'log',
    smtpUrl,
    from: from(env, baseUrl),
    passwordResetTtlMs: lifetime(env, 'PASSWORD_RESET_TTL', '30m', 24 * 3_600_000, '24h'),
    emailVerificationTtlMs: lifetime(env, 'EMAIL_VERIFICATION_TTL', '24h', 7 * 86_400_000, '7d'),
    retryBaseMs: integer(env, 'MAIL_RETRY_BASE_MS', 30_000, 1, 3_600_000),
    timeoutMs: integer(env, 'MAIL_TIMEOUT_MS', 10_000, 100, 120_000),
  } as const);
}
