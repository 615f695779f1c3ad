/**
 * The audit trail's event names. Names are contracts: operators' queries and alerts select on
 * them. Declared, not coded: docs/operations.md "Audit trail" documents the same table.
 *
 * @example if (isAuditEventName(name)) query.events.push(name);
 */

export const AUDIT_EVENTS = {
  'login.succeeded': 'a username and password were accepted (login page, applications page)',
  'login.failed': 'a username and password were refused (unknown user, wrong password, disabled user)',
  'login.blocked': 'a sign-in was refused unchecked: too soon after earlier failures of the username from the address (or of the browser), or the address over its ceiling for a username that failed there',
  'consent.granted': 'a user pressed Allow on the consent page',
  'consent.denied': 'a user pressed Deny on the consent page, or Cancel on the login page',
  'token.issued': 'an authorization code was exchanged for tokens, or a machine client got a client_credentials token (detail.grant_type; written with the tokens, in their statement)',
  'token.refreshed': 'a refresh token was exchanged for new tokens (written with the tokens, in their statement)',
  'token.revoked': 'grants or tokens ended: RFC 7009 revocation, a user revoking an application, an operator (tokens:revoke, a user disabled or deleted, a client deleted)',
  'token.reuse_detected': 'a used refresh token or a redeemed code was presented again; its grant was revoked',
  'client.registered': 'a client registered at /api/register.php (the spec\'s shape, or RFC 7591), or created by an operator (clients:create): detail.registration',
  'client.updated': 'a client name or redirect URI changed (settings page, clients:set-redirect-uri)',
  'client.secret_rotated': 'a client secret was rotated (settings page, clients:rotate-secret); detail: the grace and when the previous secret stops working',
  'client.previous_secret_ended': 'the previous client secret was ended before its grace was over (settings page, clients:end-previous-secret)',
  'client.deleted': 'an operator deleted a client (clients:delete), or the cleanup job a self-registered one unused for DYNAMIC_CLIENT_IDLE_DAYS (actor system, reason idle)',
  'session.ended': 'a login session ended: the user signed out (RP-initiated logout, the applications page), or an operator ended the user\'s sessions (detail.reason); detail: the applications told by back-channel logout, the grants without offline_access ended',
  'user.created': 'an operator created a user (user:create)',
  'user.disabled': 'an operator disabled a user (users:disable)',
  'user.enabled': 'an operator enabled a disabled user (users:enable)',
  'user.deleted': 'an operator deleted a user (users:delete)',
  'user.password_set': 'an operator set a user’s password (users:set-password)',
  'user.signed_out': 'every session of a user ended (detail.reason): an operator (users:sign-out, users:set-password, users:disable), the user (password_changed, signed_out_everywhere on the account page), a password reset (password_reset)',
  'user.password_changed': 'a user changed their password on the account page (the current one checked under the login guard)',
  'user.password_reset_requested': 'someone asked for a password reset mail (detail.email: the address typed, whether or not it names a user)',
  'user.password_reset': 'a user set a new password through a mailed reset link',
  'user.email_verification_requested': 'a user asked for a verification mail on the account page (or user:create queued one)',
  'user.email_verified': 'a user followed a mailed verification link (or an operator said so: user:create --email-verified)',
  'user.link_mailed': 'the mail with a reset or verification link was taken by the SMTP server (or written to the log): detail.purpose',
  'user.link_limited': 'a reset mail was not sent: the account is over its budget of reset mails (detail.purpose)',
  'user.link_refused': 'a mailed link was refused: detail.reason unknown (forged, mistyped), used or expired; detail.purpose',
  'resource.added': 'an operator declared a resource server (resources:add)',
  'resource.removed': 'an operator removed a declared resource server (resources:remove)',
  'webhook.endpoint_added': 'a client added a webhook endpoint (settings page, /api/webhooks.php)',
  'webhook.endpoint_removed': 'a client removed a webhook endpoint (settings page, /api/webhooks.php)',
  'webhook.secret_rotated': 'a client rotated a webhook endpoint’s signing secret (settings page, /api/webhooks.php); detail: the grace and when the previous secret stops signing',
  'key.rotated': 'an operator started a signing-key rotation (keys:rotate): the new key, when it signs, when the key it replaces retires',
  'key.retired': 'a replaced signing key outlived every token it signed: it left the JWKS and its private part was erased',
} as const;

export type AuditEventName = keyof typeof AUDIT_EVENTS;

export const AUDIT_EVENT_NAMES = Object.keys(AUDIT_EVENTS) as AuditEventName[];

export function isAuditEventName(value: unknown): value is AuditEventName {
  return typeof value === 'string' && Object.hasOwn(AUDIT_EVENTS, value);
}
