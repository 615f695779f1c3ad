/**
 * What changes about a client after registration: name, redirect URI (validated as at
 * registration) and secret, from its settings page or from an operator's CLI; and, from the CLI
 * only, the keys it signs its assertions with (private_key_jwt). Each change, its
 * webhook event (`client.updated`, `client.secret_rotated`) and its audit row (the same names,
 * and `client.previous_secret_ended`) are written in one transaction: there is no change without
 * its event and row, nor the reverse.
 *
 * A rotation keeps the secret it replaces working for a grace period (CLIENT_SECRET_ROTATION_GRACE,
 * or the rotation's own), so that every running instance of the client can switch without a failed
 * request; a grace of 0 ends it at once (a leaked secret). Only the secret just replaced overlaps:
 * rotating again within a grace ends the older one.
 *
 * @example const { clientSecret } = await settings.rotateSecret(clientId, requestContext(ctx, clientActor(clientId)), { graceMs: 3_600_000 });
 */
import { isDeepStrictEqual } from 'node:util';
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import type { Client, Prisma } from '../generated/prisma/client.js';
import type { Writer } from '../webhooks/outbox.js';
import { ClientMetadataError, describedBy, logoutFields, logoutFieldsOf, registeredMetadata } from './client-metadata.js';
import type { LogoutFields, MetadataRules } from './client-metadata.js';
import { ClientInputError, validName, validRedirectUri } from './client-store.js';
import { DEFAULT_GRACE_MS, formatGrace } from '../config/durations.js';
import { graceEnd, inGrace } from './secret-grace.js';
import { generateClientSecret, hashClientSecret } from './credentials.js';

export interface ClientSettings {
  /** The grace a rotation gives the replaced secret unless it says otherwise. */
  readonly defaultGraceMs: number;
  /** Applies the fields given; raises `client.updated` naming what changed (nothing: no event). */
  update(clientId: string, input: ClientUpdate, context: AuditContext): Promise<{ client: Client; changed: string[] }>;
  /**
   * A new secret, returned this once; the replaced one works until `client.previousSecretExpiresAt`
   * (`graceMs` from now, {@link defaultGraceMs} unless given; 0: not at all).
   */
  rotateSecret(clientId: string, context: AuditContext, options?: { graceMs?: number }): Promise<{ client: Client; clientSecret: string }>;
  /** Ends the previous secret's grace now; `ended` false when no previous secret was still working. */
  endPreviousSecret(clientId: string, context: AuditContext): Promise<{ client: Client; ended: boolean }>;
  /**
   * Makes the client authenticate with assertions signed by its own keys (private_key_jwt,
   * RFC 7523 §2.2): `keys` holds `jwks` or `jwks_uri` (and `token_endpoint_auth_signing_alg` if it
   * signs with one algorithm only), replacing any it had. A client has one way to authenticate:
   * its secrets, the previous one too, end here. An operator's change (clients:set-jwks).
   */
  setKeys(clientId: string, keys: Record<string, unknown>, context: AuditContext): Promise<{ client: Client; changed: string[] }>;
}

const KEY_FIELDS = ['jwks', 'jwks_uri', 'token_endpoint_auth_signing_alg'] as const;

/**
 * What the settings page (or an operator) may change. Logout URIs: a string sets the one
 * post-logout redirect URI (replacing the list) or the back-channel logout URI; '' removes it.
 */
export interface ClientUpdate {
  clientName?: unknown;
  redirectUri?: unknown;
  postLogoutRedirectUri?: unknown;
  backchannelLogoutUri?: unknown;
}

/** The client's logout fields after `input`, checked as at registration (client-metadata.ts `logoutFields`). */
function logoutAfter(client: Client, input: ClientUpdate, rules: Pick<MetadataRules, 'backchannelDestination'>): LogoutFields {
  const now = logoutFieldsOf(client);
  const asked = (value: unknown, name: string) => {
    if (value !== undefined && typeof value !== 'string') throw new ClientInputError(`${name} must be a string`);
    return value as string | undefined;
  };
  const post = asked(input.postLogoutRedirectUri, 'post_logout_redirect_uri');
  const backchannel = asked(input.backchannelLogoutUri, 'backchannel_logout_uri');
  const body = {
    ...(post === undefined ? (now.post_logout_redirect_uris ? { post_logout_redirect_uris: now.post_logout_redirect_uris } : {}) : post === '' ? {} : { post_logout_redirect_uris: [post] }),
    ...(backchannel === undefined ? (now.backchannel_logout_uri ? { backchannel_logout_uri: now.backchannel_logout_uri } : {}) : backchannel === '' ? {} : { backchannel_logout_uri: backchannel }),
  };
  try {
    return logoutFields(body, describedBy(client)?.application_type ?? 'web', rules);
  } catch (error) {
    if (error instanceof ClientMetadataError) throw new ClientInputError(error.message.replace(/^post_logout_redirect_uris: [^ ]+: /, 'post_logout_redirect_uri: '));
    throw error;
  }
}

/** A client in the spec's shape, as the metadata it stands for (adapter.ts reads it so). */
function specShape(client: Client): Record<string, unknown> {
  return {
    client_name: client.clientName, redirect_uris: [client.redirectUri], grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'], application_type: 'web', token_endpoint_auth_method: 'client_secret_post',
  };
}

/** A client described by its metadata has its redirect URIs there: the one URI set here replaces them all. */
function registeredRedirect(client: Client, redirectUri: string): { metadata?: Prisma.InputJsonObject } {
  if (!describedBy(client)) return {};
  return { metadata: { ...(client.metadata as Prisma.JsonObject), redirect_uris: [redirectUri] } as Prisma.InputJsonObject };
}

/** Whether the client's previous secret still works at `now`. */
export function previousSecretWorks(client: Pick<Client, 'previousSecretHash' | 'previousSecretExpiresAt'>, now: Date): boolean {
  return inGrace(client.previousSecretHash, client.previousSecretExpiresAt, now);
}

/** The client's row, locked until the change commits: two rotations at once take turns, and neither loses the other's secret. */
async function lockedClient(tx: Writer, clientId: string): Promise<Client> {
  const [locked] = await tx.$queryRaw<{ client_id: string }[]>`SELECT client_id FROM clients WHERE client_id = ${clientId} FOR UPDATE`;
  const client = locked && await tx.client.findUnique({ where: { clientId } });
  if (!client) throw new ClientInputError('the application is no longer registered');
  return client;
}

/** `rules`: where a backchannel_logout_uri may lead (the webhook guard). */
export function createClientSettings(changes: ChangeTransaction, options: { graceMs?: number; clock?: () => Date; rules?: Pick<MetadataRules, 'backchannelDestination'> } = {}): ClientSettings {
  const defaultGraceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  const clock = options.clock ?? (() => new Date());
  return {
    defaultGraceMs,
    update(clientId, input, context) {
      const clientName = input.clientName === undefined ? undefined : validName(input.clientName);
      const redirectUri = input.redirectUri === undefined ? undefined : validRedirectUri(input.redirectUri);
      return changes(async (tx, record) => {
        const before = await tx.client.findUnique({ where: { clientId } });
        if (!before) throw new ClientInputError('the application is no longer registered');
        // A machine client (client_credentials) is redirected nowhere: a redirect URI would do nothing.
        if (redirectUri !== undefined && before.redirectUri === null) throw new ClientInputError('this client does not use the authorization code flow: it has no redirect URI to change');
        const logoutAsked = input.postLogoutRedirectUri !== undefined || input.backchannelLogoutUri !== undefined;
        if (logoutAsked && before.redirectUri === null) throw new ClientInputError('this client does not use the authorization code flow: it signs no user in, so no one signs out of it');
        const logoutBefore = logoutFieldsOf(before);
        const logout = logoutAsked ? logoutAfter(before, input, options.rules ?? {}) : logoutBefore;
        const changed = [
          ...(clientName !== undefined && clientName !== before.clientName ? ['client_name'] : []),
          ...(redirectUri !== undefined && redirectUri !== before.redirectUri ? ['redirect_uri'] : []),
          ...(!isDeepStrictEqual(logout.post_logout_redirect_uris, logoutBefore.post_logout_redirect_uris) ? ['post_logout_redirect_uris'] : []),
          ...(logout.backchannel_logout_uri !== logoutBefore.backchannel_logout_uri ? ['backchannel_logout_uri'] : []),
        ];
        if (changed.length === 0) return { client: before, changed };
        const redirected = redirectUri !== undefined ? registeredRedirect(before, redirectUri).metadata : undefined;
        const { post_logout_redirect_uris: _p, backchannel_logout_uri: _b, ...rest } = (redirected ?? before.metadata) as Record<string, unknown>;
        const client = await tx.client.update({
          where: { clientId },
          data: {
            ...(clientName !== undefined ? { clientName } : {}), ...(redirectUri !== undefined ? { redirectUri } : {}),
            metadata: { ...rest, ...logout } as Prisma.InputJsonObject,
          },
        });
        const values = { client_id: clientId, client_name: client.clientName, redirect_uri: client.redirectUri, changed };
        await record.event('client.updated', values);
        await record.audit('client.updated', { client: clientId, detail: values }, context);
        return { client, changed };
      });
    },
    rotateSecret(clientId, context, { graceMs = defaultGraceMs } = {}) {
      const clientSecret = generateClientSecret();
      return changes(async (tx, record) => {
        const before = await lockedClient(tx, clientId);
        // RFC 6749 §2.1: a public client (`none`) has no secret, nor does one that signs with its keys (`private_key_jwt`): one would change nothing it does.
        if (before.clientSecretHash === null) throw new ClientInputError('this client authenticates without a secret (token_endpoint_auth_method none or private_key_jwt): it has no secret to rotate');
        const until = graceEnd(clock(), graceMs);
        const client = await tx.client.update({
          where: { clientId },
          data: { clientSecretHash: hashClientSecret(clientSecret), previousSecretHash: graceMs > 0 ? before.clientSecretHash : null, previousSecretExpiresAt: until },
        });
        const previous_secret_expires_at = until.toISOString();
        await record.event('client.secret_rotated', { client_id: clientId, client_name: client.clientName, previous_secret_expires_at });
        await record.audit('client.secret_rotated', { client: clientId, detail: { client_name: client.clientName, grace: formatGrace(graceMs), previous_secret_expires_at } }, context);
        return { client, clientSecret };
      });
    },
    setKeys(clientId, keys, context) {
      return changes(async (tx, record) => {
        const before = await lockedClient(tx, clientId);
        const was = describedBy(before) ?? specShape(before);
        const body: Record<string, unknown> = { ...was, token_endpoint_auth_method: 'private_key_jwt' };
        for (const field of KEY_FIELDS) body[field] = keys[field];
        let metadata;
        try {
          metadata = registeredMetadata(body, { clientCredentials: true });
        } catch (error) {
          if (error instanceof ClientMetadataError) throw new ClientInputError(error.message);
          throw error;
        }
        // jsonb keeps an object's members in an order of its own: compared as values.
        const changed = ['token_endpoint_auth_method', ...KEY_FIELDS].filter((field) => !isDeepStrictEqual((was as Record<string, unknown>)[field], (metadata as unknown as Record<string, unknown>)[field]));
        const client = await tx.client.update({
          where: { clientId },
          data: { metadata: metadata as unknown as Prisma.InputJsonObject, clientSecretHash: null, previousSecretHash: null, previousSecretExpiresAt: null },
        });
        const values = { client_id: clientId, client_name: client.clientName, redirect_uri: client.redirectUri, changed };
        await record.event('client.updated', values);
        await record.audit('client.updated', { client: clientId, detail: { ...values, ...(metadata.jwks_uri ? { jwks_uri: metadata.jwks_uri } : {}) } }, context);
        return { client, changed };
      });
    },
    endPreviousSecret(clientId, context) {
      return changes(async (tx, record) => {
        const before = await lockedClient(tx, clientId);
        const now = clock();
        if (!previousSecretWorks(before, now)) return { client: before, ended: false };
        const client = await tx.client.update({ where: { clientId }, data: { previousSecretHash: null, previousSecretExpiresAt: now } });
        const detail = { client_name: client.clientName, previous_secret_expires_at: now.toISOString(), was_to_expire_at: before.previousSecretExpiresAt!.toISOString() };
        await record.audit('client.previous_secret_ended', { client: clientId, detail }, context);
        return { client, ended: true };
      });
    },
  };
}
