/**
 * The event catalogue: every event a client can subscribe to, when it is raised and what its
 * `data` holds. Payloads name the client and, where the user gave the client access, the user
 * (never on a refusal); they never carry
 * secrets, tokens or codes (a grant is named by its id, which authorizes nothing).
 *
 * @example if (isEventType(name)) endpoint.events.push(name);
 */

/** Declared, not coded: docs/webhooks.md "Events" documents the same table. */
export const EVENT_CATALOGUE = {
  'authorization.granted': {
    when: 'each approved authorization request: on the consent page, or silently when an earlier consent covers it',
    data: ['client_id', 'client_name', 'username', 'scope'],
  },
  // No username or account id: registration is open, so any client could send signed-in users
  // here and learn who each one who refuses is. The audit trail keeps who it was (consent.denied).
  'authorization.denied': {
    when: 'a user refuses an authorization request (Deny on the consent page, Cancel on the login page); it names no user',
    data: ['client_id', 'client_name'],
  },
  'token.issued': {
    when: 'an authorization code is exchanged for tokens at the token endpoint, or a machine client gets a token for itself (client_credentials: no user, no grant, the resource it is for)',
    data: ['client_id', 'client_name', 'grant_type', 'username?', 'grant_id?', 'scope', 'resource?'],
  },
  'token.refreshed': {
    when: 'a refresh token is exchanged for new tokens',
    data: ['client_id', 'client_name', 'username', 'grant_id', 'scope'],
  },
  'token.revoked': {
    when: 'a token or grant is revoked: RFC 7009 revocation, refresh-token reuse, code replay, a user revoking the application, an operator',
    data: ['client_id', 'client_name', 'username?', 'grant_id', 'token_type', 'reason'],
  },
  // A reset is someone proving they hold the address, not the password: a client that keeps its own
  // session or an offline grant may want to look again. Sent to every client the user had a grant with.
  'user.password_reset': {
    when: 'a user reset their password with a mailed link: every session of theirs ended, and each grant without offline_access was revoked (a token.revoked each, reason password_reset); sent to every client holding a grant of the user before the reset',
    data: ['client_id', 'client_name', 'username', 'grant_revoked'],
  },
  'client.updated': {
    when: 'the client name or redirect URI is changed in the settings',
    data: ['client_id', 'client_name', 'redirect_uri', 'changed'],
  },
  'client.secret_rotated': {
    when: 'the client secret is rotated (settings page, clients:rotate-secret); the previous secret works until previous_secret_expires_at',
    data: ['client_id', 'client_name', 'previous_secret_expires_at'],
  },
  'webhook.test': {
    when: 'a test event is requested for one endpoint (sent to that endpoint whatever it subscribes to)',
    data: ['client_id', 'client_name', 'webhook_id'],
  },
} as const;

export type EventType = keyof typeof EVENT_CATALOGUE;

export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && Object.hasOwn(EVENT_CATALOGUE, value);
}

/**
 * Why a token.revoked event was raised. `admin_revoked`: an operator ended the grant (the CLI's
 * tokens:revoke, or the user was disabled or deleted). `signed_out_everywhere`, `password_reset`:
 * the user's sessions ended, and with them every grant without offline_access (oidc/session-end.ts).
 */
export type RevocationReason = 'revocation_request' | 'refresh_token_reuse' | 'code_replay' | 'user_revoked' | 'grant_revoked' | 'admin_revoked' | 'session_ended' | 'signed_out_everywhere' | 'password_reset';

/** What every event's `data` holds; the rest depends on the type (see the catalogue). */
export interface EventData {
  client_id: string;
  client_name: string;
  username?: string;
  [field: string]: unknown;
}

/** The body POSTed to an endpoint. @see https://www.standardwebhooks.com/ (payload structure) */
export interface WebhookEvent {
  id: string;
  type: EventType;
  created_at: string;
  data: EventData;
}
