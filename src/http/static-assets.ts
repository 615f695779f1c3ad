/** Serves the stylesheet at /assets/site.css (the pages' CSP allows styles from 'self' only). */
import fs from 'node:fs';
import path from 'node:path';
import type { Middleware } from 'koa';

export const STYLESHEET_PATH = '/assets/site.css';

export function staticAssets(viewsDir: string): Middleware {
  const css = fs.readFileSync(path.join(viewsDir, 'site.css'));
  return async (ctx, next) => {
    if (ctx.path !== STYLESHEET_PATH || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    ctx.type = 'text/css';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = css;
  };
}
