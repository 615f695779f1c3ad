/**
 * The clients that bring themselves and the resources they ask for (docs/mcp.md,
 * docs/native-and-browser-apps.md): RFC 7591 registration, Client ID Metadata Documents, idle
 * self-registered clients, and the resource servers declared in RESOURCES.
 *
 * @example const { standardClients } = loadConfig(process.env);
 */
import { boolean, ConfigError, integer, read } from './env.js';
import type { Env } from './env.js';
import { declaredResources } from './resources.js';
import type { ResourceDeclaration } from './resources.js';

export interface StandardClients {
  /** REGISTRATION_INITIAL_ACCESS_TOKEN: required as a Bearer token by RFC 7591 registration (§3); unset, registration is open. */
  readonly registrationInitialAccessToken: string | undefined;
  /** DYNAMIC_CLIENT_IDLE_DAYS: a self-registered client that obtained no token for this long is removed by the cleanup job. */
  readonly dynamicClientIdleDays: number;
  /** Fetching Client ID Metadata Documents (CLIENT_METADATA_*). */
  readonly metadataDocuments: {
    /** Fetch from loopback and private networks too (development, tests); never link-local or metadata addresses. */
    readonly allowPrivateNetworks: boolean;
    /** One fetch: DNS, connect, TLS, the whole body. */
    readonly timeoutMs: number;
    readonly maxBytes: number;
    /** How long a document is kept: its Cache-Control max-age (or Expires), within these bounds. */
    readonly cacheMinSeconds: number;
    readonly cacheMaxSeconds: number;
  };
  /** RESOURCES: resource servers declared in configuration (beside those of resources:add). */
  readonly resources: readonly ResourceDeclaration[];
}

export function standardClients(env: Env): StandardClients {
  const token = read(env, 'REGISTRATION_INITIAL_ACCESS_TOKEN');
  if (token !== undefined && !/^[\x21-\x7e]{32,}$/.test(token)) {
    throw new ConfigError('REGISTRATION_INITIAL_ACCESS_TOKEN', 'must be at least 32 printable characters without spaces');
  }
  const cacheMinSeconds = integer(env, 'CLIENT_METADATA_CACHE_MIN_SECONDS', 30, 0, 86_400);
  const cacheMaxSeconds = integer(env, 'CLIENT_METADATA_CACHE_MAX_SECONDS', 86_400, 0, 7 * 86_400);
  if (cacheMaxSeconds < cacheMinSeconds) throw new ConfigError('CLIENT_METADATA_CACHE_MAX_SECONDS', `must not be below CLIENT_METADATA_CACHE_MIN_SECONDS (${cacheMinSeconds})`);
  return Object.freeze({
    registrationInitialAccessToken: token,
    dynamicClientIdleDays: integer(env, 'DYNAMIC_CLIENT_IDLE_DAYS', 30, 1, 36_500),
    metadataDocuments: Object.freeze({
      allowPrivateNetworks: boolean(env, 'CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS'),
      timeoutMs: integer(env, 'CLIENT_METADATA_TIMEOUT_MS', 5000, 100, 60_000),
      maxBytes: integer(env, 'CLIENT_METADATA_MAX_BYTES', 5120, 256, 1_048_576),
      cacheMinSeconds,
      cacheMaxSeconds,
    }),
    resources: Object.freeze(declaredResources(env).map((resource) => Object.freeze({ ...resource, scopes: Object.freeze([...resource.scopes]) }))),
  });
}
