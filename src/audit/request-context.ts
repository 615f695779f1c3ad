/**
 * The audit context of an HTTP request: who acted, and the address and request id the access
 * log writes for the same request (http/client-address.ts, http/request-id.ts), so an audit row
 * leads to the request's log lines.
 *
 * @example await audit.record('consent.granted', { user, client }, requestContext(ctx, userActor(user)));
 */
import type { Context } from 'koa';
import { clientAddress } from '../http/client-address.js';
import type { AuditContext } from './audit-log.js';

export function requestContext(ctx: Context, actor: string): AuditContext {
  return { actor, address: clientAddress(ctx), requestId: (ctx.state as { requestId?: string }).requestId };
}
