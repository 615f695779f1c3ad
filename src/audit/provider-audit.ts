/**
 * Token events the provider reports itself, in the audit trail (webhooks/provider-events.ts
 * raises the same ones as webhooks):
 *
 * | provider event                                                         | audit event                            |
 * |------------------------------------------------------------------------|----------------------------------------|
 * | `grant.revoked` at the token endpoint (code replay, refresh-token reuse) | `token.reuse_detected`               |
 * | `access_token.destroyed` / `refresh_token.destroyed` at revocation     | `token.revoked` (`revocation_request`) |
 * | `grant.revoked` elsewhere (not the revocation endpoint's own)          | `token.revoked` (`grant_revoked`)      |
 *
 * The actor is the client whose credentials the request carried (`system` without one). Rows
 * are written before the response leaves (`settle`, oidc/event-work.ts).
 *
 * @example const tokenAudit = providerAudit({ provider, audit, log }); koa.use(tokenAudit.settle);
 */
import type { Middleware } from 'koa';
import Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { eventWork, grantRevocationReason } from '../oidc/event-work.js';
import { clientActor, SYSTEM } from './audit-events.js';
import type { AuditLog } from './audit-log.js';
import { requestContext } from './request-context.js';

type Entities = Record<string, { accountId?: string } | undefined>;

export function providerAudit({ provider, audit, log }: { provider: Provider; audit: AuditLog; log: (error: unknown) => void }): { settle: Middleware } {
  const { track, settle } = eventWork(log);
  const context = (ctx: KoaContextWithOIDC) => requestContext(ctx, ctx.oidc.client ? clientActor(ctx.oidc.client.clientId) : SYSTEM);

  provider.on('grant.revoked', (ctx, grantId) => track(ctx, async () => {
    if (ctx.oidc.route === 'revocation') return; // recorded from `destroyed` below
    const reason = grantRevocationReason(ctx);
    const entities = ctx.oidc.entities as unknown as Entities;
    // A replayed code is deleted with its grant before this event: a code replay names no user (grant_id links it).
    const user = entities.RefreshToken?.accountId ?? entities.Grant?.accountId;
    const fields = { user, client: ctx.oidc.client?.clientId, detail: { reason, token_type: 'grant', grant_id: grantId } };
    await audit.record(reason === 'grant_revoked' ? 'token.revoked' : 'token.reuse_detected', fields, context(ctx));
  }));

  const revoked = (tokenType: 'access_token' | 'refresh_token') => (token: { accountId?: string; grantId?: string }) => {
    const ctx = Provider.ctx;
    if (ctx?.oidc?.route !== 'revocation' || !ctx.oidc.client) return;
    const fields = { user: token.accountId, client: ctx.oidc.client.clientId, detail: { reason: 'revocation_request', token_type: tokenType, grant_id: token.grantId } };
    track(ctx, () => audit.record('token.revoked', fields, context(ctx)));
  };
  provider.on('access_token.destroyed', revoked('access_token'));
  provider.on('refresh_token.destroyed', revoked('refresh_token'));

  return { settle };
}
