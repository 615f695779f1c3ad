/** Reading fields of a parsed form or JSON body. */
import type { Context } from 'koa';
import { ServiceError } from '../errors.js';

/** The field as a string ('' when absent); a repeated or non-string field is a bad request. */
export function field(ctx: Context, name: string): string {
  const body = (ctx.request as { body?: unknown }).body;
  const value = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>)[name] : undefined;
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new ServiceError('invalid_request', `${name} must be given once, as a string`);
  return value;
}
