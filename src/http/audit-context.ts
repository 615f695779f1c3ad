/**
 * The audit context of an HTTP request: who acted, and the address and request id the access
 * log writes for the same request, so an audit row leads to the request's log lines.
 *
 * @example await records.request((record) => record.audit('consent.granted', { user, client }, requestContext(ctx, userActor(user))));
 */
import type { Context } from 'koa';
import type { AuditContext } from '../audit/audit-log.js';
import { clientAddress } from './client-address.js';

export function requestContext(ctx: Context, actor: string): AuditContext {
  return { actor, address: clientAddress(ctx), requestId: ctx.state.requestId };
}
