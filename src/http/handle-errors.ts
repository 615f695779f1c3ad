/**
 * Turns anything thrown below into the spec's `{error, error_description}` with its status,
 * through one responder (JSON or page). Internals never reach a response: an unexpected
 * error is logged and answered with a generic 500.
 */
import type { Context, Middleware } from 'koa';
import { errors } from 'oidc-provider';
import { ServiceError, specErrorCode, specStatus } from '../errors.js';
import type { ErrorBody, ErrorResponder } from '../errors.js';

/** Fixed words for client errors raised by body parsers, whose messages may echo internals. */
const CLIENT_ERRORS: Record<number, string> = {
  400: 'the request body is malformed',
  405: 'method not allowed',
  413: 'the request body is too large',
  415: 'unsupported request content type or charset',
};

function toWire(error: unknown): { body: ErrorBody; status: number } | undefined {
  if (error instanceof ServiceError) return { body: error.body, status: error.status };
  if (error instanceof errors.OIDCProviderError) {
    return { body: { error: specErrorCode(error.error), error_description: error.error_description ?? error.message }, status: error.statusCode };
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // A body of the wrong type or size is the spec's `invalid_request`, with its 400 (a parser
    // would say 415 or 413); 405 keeps its status.
    return { body: { error: 'invalid_request', error_description: CLIENT_ERRORS[status] ?? 'bad request' }, status: status === 405 ? 405 : specStatus('invalid_request', status) };
  }
  return undefined;
}

export function handleErrors(respond: ErrorResponder, log: (error: unknown, ctx: Context) => void): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null) {
        respond(ctx, { error: 'not_found', error_description: `nothing is served at ${ctx.method} ${ctx.path}` }, 404);
      }
    } catch (error) {
      const wire = toWire(error);
      if (!wire) log(error, ctx);
      const { body, status } = wire ?? {
        body: { error: 'server_error', error_description: 'the service could not complete the request' },
        status: 500,
      };
      respond(ctx, body, status);
    }
  };
}
