/**
 * The mails' words. Every link is built on BASE_URL's origin, never on the request's Host or
 * X-Forwarded-Host: a request cannot choose where a link points (no host-header link poisoning).
 *
 * @example const mail = resetMail(baseUrl, 'alice@example.com', [{ username: 'alice', token }], 30 * 60_000);
 */
import { formatGrace } from '../config/durations.js';
import type { Mail } from './transport.js';

export const RESET_PATH = '/api/reset-password.php';
export const VERIFY_PATH = '/api/verify-email.php';

/** `path?token=…` on BASE_URL's origin. */
export const linkTo = (baseUrl: string, path: string, token: string) => `${baseUrl}${path}?token=${encodeURIComponent(token)}`;

const minutes = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} hour${ms === 3_600_000 ? '' : 's'}` : ms % 60_000 === 0 ? `${ms / 60_000} minutes` : formatGrace(ms));

/** One mail for every account the address names, a link each (an address may be shared). */
export function resetMail(baseUrl: string, to: string, accounts: readonly { username: string; token: string }[], ttlMs: number): Mail {
  const links = accounts.map(({ username, token }) => `  ${username}: ${linkTo(baseUrl, RESET_PATH, token)}`).join('\n');
  return {
    to,
    subject: 'Reset your password',
    text: `Someone (we hope you) asked to reset the password of the account${accounts.length > 1 ? 's' : ''} of this address at ${new URL(baseUrl).host}.\n\n`
      + `To choose a new password, open:\n${links}\n\n`
      + `The link works once, for ${minutes(ttlMs)}. Resetting signs you out everywhere.\n`
      + 'If you did not ask for this, ignore this mail: your password stays as it is.\n',
  };
}

export function verificationMail(baseUrl: string, to: string, username: string, token: string, ttlMs: number): Mail {
  return {
    to,
    subject: 'Verify your e-mail address',
    text: `To verify that this address belongs to ${username} at ${new URL(baseUrl).host}, open:\n  ${linkTo(baseUrl, VERIFY_PATH, token)}\n\n`
      + `The link works once, for ${minutes(ttlMs)}. If you did not ask for this, ignore this mail.\n`,
  };
}
