/**
 * How an error reaches a person or a program: the spec's JSON body for API calls and for
 * requests that prefer JSON, a readable page for browsers.
 */
import type { Context } from 'koa';
import type { ErrorResponder } from '../errors.js';
import { foldPath } from '../http/exact-paths.js';
import type { Views } from './views.js';

const TITLES: Record<number, string> = {
  400: 'The request could not be completed',
  401: 'The application could not be identified',
  403: 'Not allowed',
  404: 'Page not found',
  409: 'This page is out of date',
  429: 'Too many requests',
  503: 'Temporarily unavailable',
};

/**
 * JSON when the path is an API (`jsonPaths`, or another spelling of one: a client library with a
 * trailing slash in its base URL gets the 404 as JSON it can read), the body is JSON, or Accept
 * prefers JSON over HTML.
 */
export function prefersJson(ctx: Context, jsonPaths: ReadonlySet<string>): boolean {
  return jsonPaths.has(foldPath(ctx.path)) || Boolean(ctx.is('json')) || ctx.accepts('html', 'json') === 'json';
}

export function createErrorResponder(views: Views, jsonPaths: ReadonlySet<string>): ErrorResponder {
  const folded = new Set([...jsonPaths].map(foldPath));
  return (ctx, body, status) => {
    ctx.set('Cache-Control', 'no-store');
    if (prefersJson(ctx, folded)) {
      ctx.status = status;
      ctx.body = body;
      return;
    }
    const title = TITLES[status] ?? (status >= 500 ? 'Something went wrong on our side' : 'The request could not be completed');
    views.respond(ctx, 'error', { title, error: body.error, description: body.error_description }, status);
  };
}
