/**
 * Token events the provider reports itself, in the audit trail (webhooks/provider-events.ts
 * raises the same ones as webhooks):
 *
 * | provider event                                                         | audit event                            |
 * |------------------------------------------------------------------------|----------------------------------------|
 * | `grant.success`, grant_type authorization_code / refresh_token          | `token.issued` / `token.refreshed`     |
 * | `grant.revoked` at the token endpoint (code replay, refresh-token reuse) | `token.reuse_detected`               |
 * | `access_token.destroyed` / `refresh_token.destroyed` at revocation     | `token.revoked` (`revocation_request`) |
 * | `grant.revoked` elsewhere (not the revocation endpoint's own)          | `token.revoked` (`grant_revoked`)      |
 *
 * The actor is the client whose credentials the request carried (`system` without one). Rows
 * are written before the response leaves (`settle`, oidc/event-work.ts). A token's row joins the
 * request's one write statement, with the tokens it records (store/write-batch.ts): a token
 * request costs no round trip more for its audit row (issue 9's budgets).
 *
 * @example const tokenAudit = providerAudit({ provider, audit, log }); koa.use(tokenAudit.settle);
 */
import type { Middleware } from 'koa';
import Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { eventWork, grantRevocationReason } from '../oidc/event-work.js';
import type { EventWorkLog } from '../oidc/event-work.js';
import { clientActor, SYSTEM } from './audit-events.js';
import { auditRow } from './audit-log.js';
import type { AuditLog } from './audit-log.js';
import type { Write } from '../store/write-batch.js';
import { requestContext } from './request-context.js';

type Entities = Record<string, { accountId?: string; grantId?: string; scope?: string } | undefined>;

export interface ProviderAuditDependencies {
  provider: Provider;
  audit: AuditLog;
  /** Adds a write to the current request's one write statement; false when no request is running. */
  joinRequestWrites: (key: string, write: Write) => boolean;
  /** A failed event's work, with its request (see oidc/event-work.ts). */
  log: EventWorkLog;
}

export function providerAudit({ provider, audit, joinRequestWrites, log }: ProviderAuditDependencies): { settle: Middleware } {
  const { track, settle } = eventWork(log);
  const context = (ctx: KoaContextWithOIDC) => requestContext(ctx, ctx.oidc.client ? clientActor(ctx.oidc.client.clientId) : SYSTEM);
  let written = 0;

  provider.on('grant.success', (ctx) => {
    const grantType = ctx.oidc.params?.grant_type;
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') return;
    const token = (ctx.oidc.entities as unknown as Entities).AccessToken;
    const fields = { user: token?.accountId, client: ctx.oidc.client?.clientId, detail: { grant_id: token?.grantId, scope: token?.scope } };
    const event = grantType === 'authorization_code' ? 'token.issued' : 'token.refreshed';
    const row = auditRow(event, fields, context(ctx));
    written += 1;
    if (!joinRequestWrites(`audit:${written}`, audit.inStatement(row))) track(ctx, () => audit.record(event, fields, context(ctx)));
  });

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
