/**
 * A client whose authentication was refused hears `invalid_client` and no more (RFC 6749 §5.2;
 * the provider keeps the reason in `error_detail`: a wrong secret, an expired or replayed
 * assertion, a key its set lacks, an audience that is not ours). The operator of a client that
 * cannot get in (a private_key_jwt integration being set up) needs that reason: one `info` line a
 * refusal, with the request id and the client, never the credential.
 *
 * @example logClientAuthRefusals(provider, logger);
 */
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Logger } from '../ops/logger.js';

/** The provider's events of the endpoints that authenticate clients. */
const EVENTS = ['grant.error', 'revocation.error', 'introspection.error'] as const;

export const CLIENT_AUTH_REFUSED = 'client authentication refused';

type Refusal = { error?: unknown; error_detail?: unknown };

export function logClientAuthRefusals(provider: Provider, logger: Pick<Logger, 'info'>): void {
  const on = provider.on.bind(provider) as unknown as (name: string, listener: (ctx: KoaContextWithOIDC, error: Refusal) => void) => void;
  for (const event of EVENTS) {
    on(event, (ctx, error) => {
      if (error.error !== 'invalid_client') return;
      logger.info({
        request_id: ctx.state?.requestId,
        endpoint: ctx.oidc?.route,
        client_id: ctx.oidc?.client?.clientId ?? ctx.oidc?.params?.client_id,
        detail: error.error_detail,
      }, CLIENT_AUTH_REFUSED);
    });
  }
}
