/**
 * Every request carries an id (issue 11 "Operable in production"): the caller's `X-Request-Id`
 * when it is safe to echo and to write into a log line — at most 128 printable ASCII characters —
 * otherwise a fresh one. It is answered in the `X-Request-Id` header and written on every log
 * line of the request, so one request can be followed through the logs by its id.
 *
 * @example koa.use(requestId()); // then ctx.state.requestId
 */
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

export const REQUEST_ID_HEADER = 'X-Request-Id';
const MAX_LENGTH = 128;
/** Printable ASCII, space excluded (a space would make ids ambiguous in plain-text tools). */
const PRINTABLE = /^[\x21-\x7e]+$/;

/** The caller's id if acceptable, else undefined. */
export function acceptedRequestId(raw: string | string[] | undefined): string | undefined {
  if (typeof raw !== 'string' || raw.length > MAX_LENGTH || !PRINTABLE.test(raw)) return undefined;
  return raw;
}

export function requestId(): Middleware {
  return async (ctx, next) => {
    const id = acceptedRequestId(ctx.req.headers['x-request-id']) ?? randomUUID();
    ctx.state.requestId = id;
    ctx.set(REQUEST_ID_HEADER, id);
    await next();
  };
}
