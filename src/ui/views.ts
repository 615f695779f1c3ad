/**
 * The pages, compiled from views/*.pug at build time (scripts/compile-views.mjs): only pug's
 * small runtime is loaded at run time. Every page gets `csrf` and `title` from its caller.
 *
 * @example ctx.body = views.render('login', { title: 'Sign in', csrf });
 */
import { fileURLToPath } from 'node:url';
import type { Context } from 'koa';
import { PAGES } from '../generated/views.js';

/** Where the pages' sources and the stylesheet live (the stylesheet is served from here). */
export const VIEWS_DIR = fileURLToPath(new URL('../../views', import.meta.url));

export interface Views {
  render(name: string, locals: Record<string, unknown>): string;
  /** Renders into the response as HTML with `status`. */
  respond(ctx: Context, name: string, locals: Record<string, unknown>, status?: number): void;
}

export function createViews(pages: Readonly<Record<string, (locals: Record<string, unknown>) => string>> = PAGES): Views {
  const render = (name: string, locals: Record<string, unknown>) => {
    const page = Object.hasOwn(pages, name) ? pages[name] : undefined;
    if (!page) throw new Error(`no view named ${name}`);
    return page(locals);
  };
  return {
    render,
    respond(ctx, name, locals, status = 200) {
      ctx.status = status;
      ctx.type = 'html';
      ctx.body = render(name, locals);
    },
  };
}
