/**
 * Token events from oidc-provider's own events (lib/actions/token.js, lib/helpers/revoke.js,
 * lib/actions/revocation.js in oidc-provider 9):
 *
 * | provider event                                  | webhook event                                  |
 * |-------------------------------------------------|------------------------------------------------|
 * | `authorization.success` (each approval)         | `authorization.granted`                        |
 * | `grant.success`, grant_type authorization_code  | `token.issued`                                 |
 * | `grant.success`, grant_type refresh_token       | `token.refreshed`                              |
 * | `grant.revoked` at the token endpoint           | `token.revoked` (code_replay, refresh_token_reuse) |
 * | `access_token.destroyed` / `refresh_token.destroyed` at the revocation endpoint | `token.revoked` (revocation_request) |
 *
 * At the revocation endpoint the token's `destroyed` event names what the client revoked (an
 * access or a refresh token); the `grant.revoked` that follows it there (provider.ts revokes
 * the whole grant) is skipped, so that one call raises one event.
 *
 * Provider events are synchronous notifications; `settle` (mounted in front of the provider)
 * holds the response until the outbox rows are written, so a client never sees a token whose
 * event could still be lost (oidc/event-work.ts).
 */
import type { Middleware } from 'koa';
import Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { eventWork, grantRevocationReason } from '../oidc/event-work.js';
import type { EventWorkLog } from '../oidc/event-work.js';
import type { Raise } from './webhook-service.js';

export interface ProviderEventDependencies {
  provider: Provider;
  raise: Raise;
  /** A failed event's work, with its request (see oidc/event-work.ts). */
  log: EventWorkLog;
}

type Entities = Record<string, { accountId?: string; grantId?: string; scope?: string; jti?: string } | undefined>;

function client(ctx: KoaContextWithOIDC) {
  const { clientId, clientName } = ctx.oidc.client!;
  return { client_id: clientId, client_name: clientName ?? clientId };
}

export function providerEvents({ provider, raise, log }: ProviderEventDependencies): { settle: Middleware } {
  const { track, settle } = eventWork(log);

  // Every approval: after the consent page, and when an existing grant already covers the
  // request (the user is not asked again, but the request is approved all the same).
  provider.on('authorization.success', (ctx) => track(ctx, async () => {
    const code = (ctx.oidc.entities as unknown as Entities).AuthorizationCode;
    await raise('authorization.granted', {
      ...client(ctx),
      account_id: code?.accountId ?? ctx.oidc.session?.accountId,
      scope: code?.scope,
    });
  }));

  provider.on('grant.success', (ctx) => track(ctx, async () => {
    const grantType = ctx.oidc.params?.grant_type;
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') return;
    const entities = ctx.oidc.entities as unknown as Entities;
    const token = entities.AccessToken;
    await raise(grantType === 'authorization_code' ? 'token.issued' : 'token.refreshed', {
      ...client(ctx),
      account_id: token?.accountId,
      grant_id: token?.grantId,
      scope: token?.scope,
    });
  }));

  provider.on('grant.revoked', (ctx, grantId) => track(ctx, async () => {
    if (ctx.oidc.route === 'revocation' || !ctx.oidc.client) return; // raised from `destroyed` below
    const entities = ctx.oidc.entities as unknown as Entities;
    await raise('token.revoked', {
      ...client(ctx),
      // The replayed code is already gone with its grant, so a replay names no user.
      account_id: entities.RefreshToken?.accountId ?? entities.Grant?.accountId,
      grant_id: grantId,
      token_type: 'grant',
      reason: grantRevocationReason(ctx),
    });
  }));

  const revoked = (tokenType: 'access_token' | 'refresh_token') => (token: { accountId?: string; grantId?: string }) => {
    const ctx = Provider.ctx;
    if (ctx?.oidc?.route !== 'revocation' || !ctx.oidc.client) return;
    track(ctx, () => raise('token.revoked', {
      ...client(ctx),
      account_id: token.accountId,
      grant_id: token.grantId,
      token_type: tokenType,
      reason: 'revocation_request',
    }));
  };
  provider.on('access_token.destroyed', revoked('access_token'));
  provider.on('refresh_token.destroyed', revoked('refresh_token'));

  return { settle };
}
