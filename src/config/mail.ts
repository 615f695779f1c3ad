/**
 * Mail (docs/accounts.md, docs/configuration.md "Mail"): where the service's mails go and how long
 * their links live. With `SMTP_URL` mails go to that SMTP server. Without it, the embedded default
 * (no `DATABASE_URL`) writes each mail to the log, and says so at start-up; a deployment with a
 * database of its own has mail off, and password reset and address verification say so.
 *
 * @example const { mail } = loadConfig(process.env); if (mail.mode === 'off') …
 */
import { ConfigError, duration, read, url } from './env.js';
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

export function mailConfig(env: Env, baseUrl: string, databaseUrl: string | undefined): MailConfig {
  const smtpUrl = url(env, 'SMTP_URL', ['smtp:', 'smtps:']);
  return Object.freeze({
    mode: smtpUrl ? 'smtp' : databaseUrl ? 'off' : 'log',
    smtpUrl,
    from: from(env, baseUrl),
    // A link's lifetime: from a minute to a day (a reset) or a week (a verification).
    passwordResetTtlMs: 1000 * duration(env, 'PASSWORD_RESET_TTL', 's', 30 * 60, 60, 86_400),
    emailVerificationTtlMs: 1000 * duration(env, 'EMAIL_VERIFICATION_TTL', 's', 86_400, 60, 7 * 86_400),
    retryBaseMs: duration(env, 'MAIL_RETRY_BASE_MS', 'ms', 30_000, 1, 3_600_000),
    timeoutMs: duration(env, 'MAIL_TIMEOUT_MS', 'ms', 10_000, 100, 120_000),
  } as const);
}
