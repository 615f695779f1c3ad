/**
 * Request bodies of our own pages and APIs: a form (`application/x-www-form-urlencoded`) or JSON,
 * at most 16 kB, parsed into `ctx.request.body` for POST, PUT and PATCH. co-body does the
 * parsing (as it did inside koa-body, which this replaces: the service takes no file uploads, and
 * koa-body's multipart parser and option schema cost ≈ 10 MB of resident memory). A body that
 * does not decode is a 400 (`bodyParseError`), never a 500. The token endpoint reads its own form
 * (oidc/spec-glue.ts).
 *
 * @example router.post('/api/register.php', parseBody(), handler)
 */
import coBody from 'co-body';
import type { Middleware } from 'koa';
import { bodyParseError } from './handle-errors.js';

const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export function parseBody({ limit = '16kb' }: { limit?: string } = {}): Middleware {
  return async (ctx, next) => {
    if (PARSED_METHODS.has(ctx.method)) {
      try {
        if (ctx.is('json')) (ctx.request as { body?: unknown }).body = await coBody.json(ctx, { limit, strict: true });
        else if (ctx.is('urlencoded')) (ctx.request as { body?: unknown }).body = await coBody.form(ctx, { limit });
      } catch (error) {
        bodyParseError(error as Error, ctx);
      }
    }
    return next();
  };
}
