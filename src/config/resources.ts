/**
 * RESOURCES: the resource servers declared in configuration, read as written. What a resource
 * server may be (its URI, scopes, name and lifetime) is the resources' rule
 * (resources/resource-declaration.ts), which the service and the commands apply to these
 * entries when they start, naming RESOURCES in the error.
 *
 * @example RESOURCES='[{"uri": "https://mcp.example.com", "scopes": "tools:read tools:call", "access_token_ttl": 300}]'
 */
import { ConfigError, read } from './env.js';
import type { Env } from './env.js';

/** How long a resource's access tokens live unless its declaration says otherwise: short, since a JWT cannot be revoked. */
export const DEFAULT_RESOURCE_TOKEN_TTL = 600;

/** A resource as declared. */
export interface ResourceDeclaration {
  readonly uri: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly accessTokenTtl: number;
}

/** A ConfigError naming RESOURCES: `problem`, then what the variable holds. */
export const resourcesError = (problem: string) =>
  new ConfigError('RESOURCES', `${problem} (a JSON array of {"uri": …, "scopes": "a b", "name"?: …, "access_token_ttl"?: seconds})`);

/**
 * RESOURCES: a JSON array of `{"uri", "scopes", "name"?, "access_token_ttl"?}`, `scopes` a
 * space-separated string as `resources:add --scopes` takes it; a name defaults to the URI, a
 * lifetime to {@link DEFAULT_RESOURCE_TOKEN_TTL} seconds.
 */
export function declaredResources(env: Env): ResourceDeclaration[] {
  const raw = read(env, 'RESOURCES');
  if (raw === undefined) return [];
  let entries: unknown;
  try {
    entries = JSON.parse(raw);
  } catch {
    throw resourcesError('is not JSON');
  }
  if (!Array.isArray(entries)) throw resourcesError('must be an array');
  return entries.map((entry: unknown, index) => {
    const { uri, scopes, name, access_token_ttl: ttl } = (entry ?? {}) as Record<string, unknown>;
    if (typeof uri !== 'string' || typeof scopes !== 'string' || (name !== undefined && typeof name !== 'string') || (ttl !== undefined && typeof ttl !== 'number')) {
      throw resourcesError(`entry ${index} must have a string uri and scopes`);
    }
    return {
      uri,
      name: name?.trim() || uri,
      scopes: [...new Set(scopes.split(' ').filter(Boolean))],
      accessTokenTtl: ttl ?? DEFAULT_RESOURCE_TOKEN_TTL,
    };
  });
}
