/**
 * What the provider's own events record: one table feeds the audit trail, the webhook events and
 * the metrics. Each record joins the request's one write statement (audit/records.ts `request`,
 * store/request-state.ts), with the change it records: it is written, logged and counted only
 * once that statement committed, so a redemption that lost its race records nothing
 * (RFC 6749 §4.1.2).
 *
 * | provider event                                 | audit row                      | webhook event                  | metric (`oauth_tokens_issued_total`) |
 * |------------------------------------------------|--------------------------------|--------------------------------|--------------------------|
 * | `authorization.success` (each approval)        | —                              | `authorization.granted`        | —                        |
 *
 * Each approval also records, with its statement, which application the login session signed in
 * to (session-end.ts `SessionClient`: its `sid`, its grant), for when the session ends; a silent
 * approval whose record the request read already, unchanged and outliving the session, writes none.
 * | `grant.success`, authorization_code            | `token.issued`                 | `token.issued`                 | grant_type=authorization_code |
 * | `grant.success`, client_credentials            | `token.issued` (no user, no grant; its resource) | `token.issued` (the same) | grant_type=client_credentials |
 * | `grant.success`, refresh_token                 | `token.refreshed`              | `token.refreshed`              | grant_type=refresh_token |
 * | `grant.revoked` at the token endpoint          | `token.reuse_detected`         | `token.revoked` (code_replay, refresh_token_reuse) | — |
 * | `grant.revoked` elsewhere, not at revocation   | `token.revoked` (grant_revoked) | `token.revoked` (grant_revoked) | —                       |
 * | `access_token.destroyed` / `refresh_token.destroyed` at revocation | `token.revoked` (revocation_request) | `token.revoked` (revocation_request) | — |
 *
 * A `grant.success` of a self-registered client that was last used over a day ago also records
 * its use (clients/client-usage.ts), in the same statement.
 *
 * At the revocation endpoint the token's `destroyed` event names what the client revoked; the
 * `grant.revoked` that follows it there (provider.ts revokes the whole grant) records nothing
 * more, so one call records one event. The audit actor is the client whose credentials the
 * request carried (`system` without one).
 *
 * @see oidc-provider 9 lib/actions/token.js, lib/helpers/revoke.js, lib/actions/revocation.js
 */
import Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { AuditEventName } from '../audit/audit-events.js';
import { clientActor, SYSTEM } from '../audit/audit-log.js';
import { requestContext } from '../http/audit-context.js';
import type { AuditFields } from '../audit/audit-log.js';
import type { Records } from '../audit/records.js';
import { useToRecord } from '../clients/client-usage.js';
import { currentState, modelKey } from '../store/request-state.js';
import type { ModelWrite } from '../store/request-state.js';
import { SESSION_TTL_SECONDS } from './provider.js';
import { sessionClientWrites } from './session-end.js';
import type { EventType } from '../webhooks/events.js';
import type { RaiseData } from '../webhooks/webhook-service.js';

/** What one provider event records. */
interface Recorded {
  /** Provider-model rows written with the request (a session's record of an application). */
  models?: ModelWrite[];
  audit?: { event: AuditEventName; fields: AuditFields };
  webhook?: { type: EventType; data: RaiseData };
  /** A token response issued, by grant type. */
  issued?: string;
}

type Token = { accountId?: string; grantId?: string; scope?: string } | undefined;
type Rule = (ctx: KoaContextWithOIDC, subject: unknown) => Recorded | undefined;

const client = (ctx: KoaContextWithOIDC) => ({ client_id: ctx.oidc.client!.clientId, client_name: ctx.oidc.client!.clientName ?? ctx.oidc.client!.clientId });
const entity = (ctx: KoaContextWithOIDC, name: string) => (ctx.oidc.entities as unknown as Record<string, Token>)[name];

/**
 * Why the provider revoked a grant outside the revocation endpoint: at the token endpoint a
 * second redemption of a code (RFC 6749 §4.1.2) or reuse of a rotated refresh token (RFC 9700
 * §4.14.2); anywhere else, a revocation it reports without saying why.
 */
function revocationReason(ctx: KoaContextWithOIDC): 'code_replay' | 'refresh_token_reuse' | 'grant_revoked' {
  const grantType = ctx.oidc.params?.grant_type;
  return grantType === 'authorization_code' ? 'code_replay' : grantType === 'refresh_token' ? 'refresh_token_reuse' : 'grant_revoked';
}

/** A token the client revoked at the revocation endpoint (RFC 7009). */
const revokedAtRevocation = (tokenType: 'access_token' | 'refresh_token'): Rule => (ctx, subject) => {
  if (ctx?.oidc?.route !== 'revocation' || !ctx.oidc.client) return undefined;
  const token = subject as Token;
  const detail = { reason: 'revocation_request', token_type: tokenType, grant_id: token?.grantId };
  return {
    audit: { event: 'token.revoked', fields: { user: token?.accountId, client: ctx.oidc.client.clientId, detail } },
    webhook: { type: 'token.revoked', data: { ...client(ctx), account_id: token?.accountId, ...detail } },
  };
};

export const PROVIDER_EVENTS: Readonly<Record<string, Rule>> = {
  // Every approval: after the consent page, and when an existing grant already covers the request.
  'authorization.success': (ctx) => {
    const code = entity(ctx, 'AuthorizationCode');
    const { session } = ctx.oidc;
    const clientId = ctx.oidc.client!.clientId;
    const signedIn = session?.accountId && session.sidFor(clientId) ? sessionClientWrites({
      sessionUid: session.uid, accountId: session.accountId, clientId, sid: session.sidFor(clientId)!, grantId: session.grantIdFor(clientId),
      backchannelLogoutUri: (ctx.oidc.client as { backchannelLogoutUri?: string }).backchannelLogoutUri,
    }, Date.now(), SESSION_TTL_SECONDS) : [];
    return {
      webhook: { type: 'authorization.granted', data: { ...client(ctx), account_id: code?.accountId ?? session?.accountId, scope: code?.scope } },
      models: signedIn,
    };
  },
  'grant.success': (ctx) => {
    const grantType = ctx.oidc.params?.grant_type;
    if (grantType === 'client_credentials') {
      // A machine's token for itself (RFC 6749 §4.4): no user, no grant; the resource it is for.
      const { scope } = entity(ctx, 'ClientCredentials') ?? {};
      const detail = { grant_type: grantType, scope, resource: ctx.oidc.params?.resource as string | undefined };
      return {
        audit: { event: 'token.issued', fields: { client: ctx.oidc.client?.clientId, detail } },
        webhook: { type: 'token.issued', data: { ...client(ctx), ...detail } },
        issued: grantType,
      };
    }
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') return undefined;
    const event = grantType === 'authorization_code' ? 'token.issued' : 'token.refreshed';
    const token = entity(ctx, 'AccessToken');
    // token.issued says which grant issued it (a code, or a machine's client_credentials above).
    const kind = event === 'token.issued' ? { grant_type: grantType } : {};
    return {
      audit: { event, fields: { user: token?.accountId, client: ctx.oidc.client?.clientId, detail: { ...kind, grant_id: token?.grantId, scope: token?.scope } } },
      webhook: { type: event, data: { ...client(ctx), account_id: token?.accountId, ...kind, grant_id: token?.grantId, scope: token?.scope } },
      issued: grantType,
    };
  },
  'grant.revoked': (ctx, grantId) => {
    if (ctx.oidc.route === 'revocation') return undefined; // recorded from `destroyed`
    const reason = revocationReason(ctx);
    // A replayed code is deleted with its grant before this event: a replay names no user (grant_id links it).
    const user = entity(ctx, 'RefreshToken')?.accountId ?? entity(ctx, 'Grant')?.accountId;
    const detail = { reason, token_type: 'grant', grant_id: grantId as string };
    return {
      audit: { event: reason === 'grant_revoked' ? 'token.revoked' : 'token.reuse_detected', fields: { user, client: ctx.oidc.client?.clientId, detail } },
      ...(ctx.oidc.client ? { webhook: { type: 'token.revoked' as const, data: { ...client(ctx), account_id: user, ...detail } } } : {}),
    };
  },
  'access_token.destroyed': revokedAtRevocation('access_token'),
  'refresh_token.destroyed': revokedAtRevocation('refresh_token'),
};

/** Events whose listener gets the token, not the request: the request is `Provider.ctx`. */
const TOKEN_FIRST = new Set(['access_token.destroyed', 'refresh_token.destroyed']);

export interface ProviderEventDependencies {
  provider: Provider;
  /** Where the records go: the request's writes (outside a request, sent on their own: a safeguard, the provider makes none there). */
  records: Pick<Records, 'request'>;
  log: (error: unknown, ctx?: KoaContextWithOIDC) => void;
}

export function recordProviderEvents({ provider, records, log }: ProviderEventDependencies): void {
  const record = (ctx: KoaContextWithOIDC, what: Recorded | undefined) => {
    if (!what) return;
    records.request((recorder, writes) => {
      for (const model of what.models ?? []) writes.models.set(modelKey(model.type, model.id), model);
      if (what.audit) recorder.audit(what.audit.event, what.audit.fields, requestContext(ctx, ctx.oidc.client ? clientActor(ctx.oidc.client.clientId) : SYSTEM));
      if (what.webhook) recorder.event(what.webhook.type, what.webhook.data);
      const { issued } = what;
      if (issued) recorder.count('tokenIssued', issued);
      // A self-registered client's last use (an operator's clients are never recorded).
      const used = ctx.oidc.client && currentState()?.clients.get(ctx.oidc.client.clientId);
      if (issued && useToRecord(used)) writes.clientsUsed.push(used!.clientId);
    }).catch((error: unknown) => log(error, ctx));
  };
  for (const [name, rule] of Object.entries(PROVIDER_EVENTS)) {
    (provider.on as (event: string, listener: (first: unknown, second: unknown) => void) => void).call(provider, name, (first, second) => {
      const [ctx, subject] = TOKEN_FIRST.has(name) ? [Provider.ctx as KoaContextWithOIDC, first] : [first as KoaContextWithOIDC, second];
      try {
        record(ctx, rule(ctx, subject));
      } catch (error) {
        log(error, ctx);
      }
    });
  }
}
