/**
 * Registered client applications, whichever dialect registered them: the spec's own shape at
 * /api/register.php ({@link ClientStore.register}) or RFC 7591 ({@link ClientStore.registerDynamic}).
 * A registration and its audit row (`client.registered`) are written in one transaction.
 *
 * @example const { client, clientSecret } = await clients.register({ clientName: 'Demo', redirectUri }, requestContext(ctx, ANONYMOUS));
 */
import { ANONYMOUS } from '../audit/audit-log.js';
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import type { Client, Prisma, PrismaClient } from '../generated/prisma/client.js';
import { ClientMetadataError, logoutFields, usesSecret } from './client-metadata.js';
import type { LogoutFields, MetadataRules, RegisteredMetadata } from './client-metadata.js';
import { ClientInputError, validName } from './client-name.js';
import { redirectUriProblem } from './redirect-uri.js';
import { generateClientId, generateClientSecret, hashClientSecret } from './credentials.js';

export type { Client };

export { ClientInputError, validName };

/**
 * How a client came to exist: `spec` (it registered itself at /api/register.php in the spec's
 * shape), `rfc7591` (it registered itself, RFC 7591), `operator` (an operator created it: the CLI,
 * in the spec's shape or with metadata of its own).
 * Only an operator's client was checked by anyone: consent says so of every other, and the idle
 * sweep never removes it (idle-clients.ts).
 */
export type Registration = 'spec' | 'rfc7591' | 'operator';

export interface ClientStore {
  /**
   * Validates and registers a client in the spec's shape; the plaintext secret is returned this
   * once only. `context` defaults to an anonymous actor; `registration` to `spec` (self-registered).
   */
  register(input: SpecRegistration, context?: AuditContext, registration?: 'spec' | 'operator'): Promise<{ client: Client; clientSecret: string }>;
  /**
   * Registers a client with its metadata as registered (client-metadata.ts checked it): by
   * itself (RFC 7591, the default) or by an operator. A secret for a client that authenticates
   * with one, returned this once; none for a public client (`none`) or one that signs assertions
   * with its keys (`private_key_jwt`). Without client_name, its client_id is its name (§2).
   */
  registerDynamic(metadata: RegisteredMetadata, context: AuditContext, registration?: 'rfc7591' | 'operator'): Promise<{ client: Client; clientSecret: string | undefined }>;
  find(clientId: string): Promise<Client | null>;
}

/**
 * A registration in the spec's shape: a name and a redirect URI, and, for logout, at most one
 * `post_logout_redirect_uri` and a `backchannel_logout_uri` (empty: none).
 */
export interface SpecRegistration {
  clientName: unknown;
  redirectUri: unknown;
  postLogoutRedirectUri?: unknown;
  backchannelLogoutUri?: unknown;
}

/** The spec shape's logout fields, checked (client-metadata.ts `logoutFields`), or a {@link ClientInputError}. */
export function specLogoutFields(input: Pick<SpecRegistration, 'postLogoutRedirectUri' | 'backchannelLogoutUri'>, rules: Pick<MetadataRules, 'backchannelDestination'>): LogoutFields {
  const given = (value: unknown) => value !== undefined && value !== null && value !== '';
  for (const [name, value] of [['post_logout_redirect_uri', input.postLogoutRedirectUri], ['backchannel_logout_uri', input.backchannelLogoutUri]] as const) {
    if (given(value) && typeof value !== 'string') throw new ClientInputError(`${name} must be a string`);
  }
  try {
    return logoutFields({
      ...(given(input.postLogoutRedirectUri) ? { post_logout_redirect_uris: [input.postLogoutRedirectUri] } : {}),
      ...(given(input.backchannelLogoutUri) ? { backchannel_logout_uri: input.backchannelLogoutUri } : {}),
    }, 'web', rules);
  } catch (error) {
    if (error instanceof ClientMetadataError) throw new ClientInputError(error.message.replace(/^post_logout_redirect_uris: [^ ]+: /, 'post_logout_redirect_uri: '));
    throw error;
  }
}

/** The redirect URI as registered, or a {@link ClientInputError} (rules in redirect-uri.ts). */
export function validRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ClientInputError('redirect_uri is required');
  const problem = redirectUriProblem(value);
  if (problem) throw new ClientInputError(problem);
  return value;
}

/** `rules`: where a backchannel_logout_uri may lead (the webhook guard). */
export function createClientStore(prisma: PrismaClient, changes: ChangeTransaction, rules: Pick<MetadataRules, 'backchannelDestination'> = {}): ClientStore {
  return {
    async register(input, context = { actor: ANONYMOUS }, registration = 'spec') {
      const clientName = validName(input.clientName);
      const redirectUri = validRedirectUri(input.redirectUri);
      const logout = specLogoutFields(input, rules);
      const clientSecret = generateClientSecret();
      const client = await changes(async (tx, record) => {
        const created = await tx.client.create({
          data: { clientId: generateClientId(), clientSecretHash: hashClientSecret(clientSecret), clientName, redirectUri, registration, metadata: logout as Prisma.InputJsonObject },
        });
        // A back-channel URI's origin only, as a webhook URL's: its path or query may carry a capability.
        const logoutDetail = {
          ...(logout.post_logout_redirect_uris ? { post_logout_redirect_uris: logout.post_logout_redirect_uris } : {}),
          ...(logout.backchannel_logout_uri ? { backchannel_logout_origin: new URL(logout.backchannel_logout_uri).origin } : {}),
        };
        await record.audit('client.registered', { client: created.clientId, detail: { client_name: clientName, redirect_uri: redirectUri, registration, ...logoutDetail } }, context);
        return created;
      });
      return { client, clientSecret };
    },
    async registerDynamic(metadata, context, registration = 'rfc7591') {
      const clientSecret = usesSecret(metadata.token_endpoint_auth_method) ? generateClientSecret() : undefined;
      const clientId = generateClientId();
      const client = await changes(async (tx, record) => {
        const created = await tx.client.create({
          data: {
            clientId,
            clientSecretHash: clientSecret === undefined ? null : hashClientSecret(clientSecret),
            clientName: metadata.client_name ?? clientId,
            redirectUri: metadata.redirect_uris[0] ?? null,
            registration,
            metadata: metadata as unknown as Prisma.InputJsonObject,
          },
        });
        const detail = {
          client_name: created.clientName, redirect_uris: metadata.redirect_uris, registration,
          token_endpoint_auth_method: metadata.token_endpoint_auth_method, grant_types: metadata.grant_types, application_type: metadata.application_type,
          ...(metadata.jwks_uri ? { jwks_uri: metadata.jwks_uri } : {}),
        };
        await record.audit('client.registered', { client: clientId, detail }, context);
        return created;
      });
      return { client, clientSecret };
    },
    find(clientId) {
      return prisma.client.findUnique({ where: { clientId } });
    },
  };
}
