/**
 * RFC 7591 dynamic client registration: the dialect of /api/register.php whose JSON body has any
 * of RFC 7591's own members (the spec's shape has `client_name` and `redirect_uri` only; a machine
 * client has no redirect URIs at all). Open, as the spec's registration is,
 * unless REGISTRATION_INITIAL_ACCESS_TOKEN is set: ui/register.ts then asks every door for it
 * (clients/registration-lock.ts). Answers 201 with the client's information and its metadata as registered (§3.2.1): a
 * `client_secret` for a confidential client only, shown this once and stored as a digest.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7591#section-3
 */
import type { Context } from 'koa';
import { ANONYMOUS } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';
import { ServiceError } from '../errors.js';
import { noteClient } from '../http/access-log.js';
import { ClientMetadataError, registeredMetadata } from '../clients/client-metadata.js';
import type { MetadataRules, RegisteredMetadata } from '../clients/client-metadata.js';
import type { ClientStore } from '../clients/client-store.js';

export interface DynamicRegistrationDependencies {
  clients: ClientStore;
  /**
   * The provider's own check of the metadata it will read for this client (oidc/registered-client.ts
   * builds it), so nothing is stored that it would refuse later. Throws its InvalidClientMetadata.
   */
  check: (metadata: RegisteredMetadata) => Promise<void>;
  /** What a self-registered client may ask for (REGISTRATION_CLIENT_CREDENTIALS; where a jwks_uri may lead). */
  rules: MetadataRules;
}

/** Members that only RFC 7591's dialect has (§2): any of them makes a body RFC 7591's. */
const RFC7591_MEMBERS = ['redirect_uris', 'grant_types', 'token_endpoint_auth_method', 'jwks', 'jwks_uri'];

/** Whether a registration body is RFC 7591's. */
export const isDynamicRegistration = (body: unknown) => typeof body === 'object' && body !== null && !Array.isArray(body)
  && RFC7591_MEMBERS.some((member) => member in body);

export function dynamicRegistration(deps: DynamicRegistrationDependencies): (ctx: Context) => Promise<void> {
  return async (ctx) => {
    let metadata: RegisteredMetadata;
    try {
      metadata = registeredMetadata((ctx.request as unknown as { body: Record<string, unknown> }).body, deps.rules);
      await deps.check(metadata);
    } catch (error) {
      if (error instanceof ClientMetadataError) throw new ServiceError(error.code, error.message);
      const refused = error as { error?: unknown; error_description?: unknown };
      if (refused.error === 'invalid_client_metadata' || refused.error === 'invalid_redirect_uri') {
        throw new ServiceError(refused.error, String(refused.error_description));
      }
      throw error;
    }
    const { client, clientSecret } = await deps.clients.registerDynamic(metadata, requestContext(ctx, ANONYMOUS));
    noteClient(ctx, client.clientId);
    ctx.status = 201;
    ctx.body = {
      client_id: client.clientId,
      ...(clientSecret === undefined ? {} : { client_secret: clientSecret, client_secret_expires_at: 0 }),
      client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
      ...metadata,
    };
  };
}
