/**
 * Request bodies of our own pages and APIs: a form (`application/x-www-form-urlencoded`) or JSON,
 * at most 16 kB, parsed into `ctx.request.body` for POST, PUT and PATCH. co-body does the
 * parsing (as it did inside koa-body, which this replaces: the service takes no file uploads, and
 * koa-body's multipart parser and option schema cost resident memory for nothing). A body that
 * does not decode is a 400 (`bodyParseError`), never a 500. The token endpoint reads its own form
 * (oidc/token-endpoint.ts).
 *
 * @example router.post('/api/register.php', parseBody(), handler)
 */
import coBody from 'co-body';
import type { Middleware } from 'koa';
import { ServiceError } from '../errors.js';
import { bodyParseError } from './responses.js';

const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** With the `u` flag a surrogate pair is one code point: only a lone surrogate is `\p{Cs}`. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether every string in a parsed JSON value (keys included) is well-formed UTF-16: JSON may
 * spell a lone surrogate (`"\ud83d"`), which no UTF-8 text can hold and PostgreSQL's jsonb refuses.
 */
function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return !LONE_SURROGATE.test(value);
  if (typeof value !== 'object' || value === null) return true;
  return Object.entries(value).every(([key, item]) => !LONE_SURROGATE.test(key) && wellFormed(item));
}

export function parseBody({ limit = '16kb' }: { limit?: string } = {}): Middleware {
  return async (ctx, next) => {
    if (PARSED_METHODS.has(ctx.method)) {
      try {
        if (ctx.is('json')) {
          const body: unknown = await coBody.json(ctx, { limit, strict: true });
          if (!wellFormed(body)) throw new ServiceError('invalid_request', 'the request body is malformed: a string holds a lone surrogate (\\ud800-\\udfff)');
          (ctx.request as { body?: unknown }).body = body;
        } else if (ctx.is('urlencoded')) (ctx.request as { body?: unknown }).body = await coBody.form(ctx, { limit });
      } catch (error) {
        bodyParseError(error as Error, ctx);
      }
    }
    return next();
  };
}
