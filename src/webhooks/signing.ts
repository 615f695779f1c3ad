/**
 * Standard Webhooks signing: one `whsec_…` secret per endpoint; each attempt carries the
 * message's `webhook-id`, its own `webhook-timestamp` and `webhook-signature: v1,<base64>`
 * (HMAC-SHA256 of `id.timestamp.body`). Receivers verify with `new Webhook(secret).verify()`
 * and reject timestamps older than 5 minutes, so every retry is signed afresh.
 *
 * While a rotated secret's grace lasts, an attempt is signed with both: the new secret's
 * signature first, then the old one's, space-separated. The spec signs "both using the current
 * key, and using an old key" for zero-downtime rotation, and receivers accept a message when
 * any signature matches, so one that knows either secret verifies every delivery.
 *
 * @see https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md ("Webhook headers")
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { inGrace } from '../clients/secret-grace.js';

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes (the spec allows 24-64). */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The secrets that sign an attempt made `at`: the endpoint's, then its previous one while its grace lasts. */
export function signingSecrets(endpoint: { secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null }, at: Date): string[] {
  const { previousSecret, previousSecretExpiresAt: until } = endpoint;
  return previousSecret && inGrace(previousSecret, until, at) ? [endpoint.secret, previousSecret] : [endpoint.secret];
}

/** The three headers of one attempt: one signature per secret, in the order given. */
export function signedHeaders(secrets: string | readonly string[], messageId: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': (typeof secrets === 'string' ? [secrets] : secrets).map((secret) => new Webhook(secret).sign(messageId, at, body)).join(' '),
  };
}
