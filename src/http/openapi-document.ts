/**
 * `GET /api/openapi.json`: the OpenAPI 3.1 description of every API path, served from
 * `openapi.json` at the repository root (beside dist/ in the image).
 * Read once at start-up, so a missing or broken file stops the service before it listens.
 *
 * @example koa.use(openapiDocument());
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';

export const OPENAPI_PATH = '/api/openapi.json';
export const OPENAPI_FILE = fileURLToPath(new URL('../../openapi.json', import.meta.url));

export function openapiDocument(file = OPENAPI_FILE): Middleware {
  const text = fs.readFileSync(file, 'utf8');
  JSON.parse(text); // fail at start-up, not on the first request
  return async (ctx, next) => {
    if (ctx.path !== OPENAPI_PATH || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    ctx.type = 'application/json';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = text;
  };
}
