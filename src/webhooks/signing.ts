/**
 * Standard Webhooks signing: one `whsec_…` secret per endpoint; each attempt carries the
 * message's `webhook-id`, its own `webhook-timestamp` and `webhook-signature: v1,<base64>`
 * (HMAC-SHA256 of `id.timestamp.body`). Receivers verify with `new Webhook(secret).verify()`
 * and reject timestamps older than 5 minutes, so every retry is signed afresh.
 *
 * @see https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes (the spec allows 24-64). */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The three headers of one attempt. */
export function signedHeaders(secret: string, messageId: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(messageId, at, body),
  };
}
