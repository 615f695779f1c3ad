/**
 * The clients that bring themselves and the resources they ask for (docs/mcp.md,
 * docs/native-and-browser-apps.md): RFC 7591 registration (and whether it may register machine
 * clients), Client ID Metadata Documents and clients' key sets (jwks_uri), idle self-registered
 * clients, and the resource servers declared in RESOURCES.
 *
 * @example const { standardClients } = loadConfig(process.env);
 */
import { boolean, ConfigError, duration, integer, read } from './env.js';
import type { Env } from './env.js';
import { declaredResources } from './resources.js';
import type { ResourceDeclaration } from './resources.js';

export interface StandardClients {
  /** REGISTRATION_INITIAL_ACCESS_TOKEN: required as a Bearer token by RFC 7591 registration (§3); unset, registration is open. */
  readonly registrationInitialAccessToken: string | undefined;
  /**
   * REGISTRATION_CLIENT_CREDENTIALS: whether RFC 7591 registration may give a confidential client
   * the client_credentials grant. Off by default: registration is open unless locked, and a
   * machine token needs nobody's consent, so anyone could otherwise get tokens for every declared
   * resource. Operators' clients (clients:create --grant-types) may have it whatever this says.
   */
  readonly registrationClientCredentials: boolean;
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
  /**
   * Clients' key sets (jwks_uri, for private_key_jwt), fetched under the documents' rules (private
   * networks, timeout, cache bounds) with a size of their own (CLIENT_JWKS_*).
   */
  readonly keySets: {
    readonly maxBytes: number;
    /** At most one fetch of a key set this often because an assertion named a key it lacks (a kid it does not know). */
    readonly refetchSeconds: number;
  };
  /** RESOURCES: resource servers declared in configuration (beside those of resources:add). */
  readonly resources: readonly ResourceDeclaration[];
}

export function standardClients(env: Env): StandardClients {
  const token = read(env, 'REGISTRATION_INITIAL_ACCESS_TOKEN');
  if (token !== undefined && !/^[\x21-\x7e]{32,}$/.test(token)) {
    throw new ConfigError('REGISTRATION_INITIAL_ACCESS_TOKEN', 'must be at least 32 printable characters without spaces');
  }
  const cacheMinSeconds = duration(env, 'CLIENT_METADATA_CACHE_MIN_SECONDS', 's', 30, 0, 86_400);
  const cacheMaxSeconds = duration(env, 'CLIENT_METADATA_CACHE_MAX_SECONDS', 's', 86_400, 0, 7 * 86_400);
  if (cacheMaxSeconds < cacheMinSeconds) throw new ConfigError('CLIENT_METADATA_CACHE_MAX_SECONDS', `must not be below CLIENT_METADATA_CACHE_MIN_SECONDS (${cacheMinSeconds})`);
  return Object.freeze({
    registrationInitialAccessToken: token,
    registrationClientCredentials: boolean(env, 'REGISTRATION_CLIENT_CREDENTIALS'),
    dynamicClientIdleDays: duration(env, 'DYNAMIC_CLIENT_IDLE_DAYS', 'd', 30, 1, 36_500),
    metadataDocuments: Object.freeze({
      allowPrivateNetworks: boolean(env, 'CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS'),
      timeoutMs: duration(env, 'CLIENT_METADATA_TIMEOUT_MS', 'ms', 5000, 100, 60_000),
      maxBytes: integer(env, 'CLIENT_METADATA_MAX_BYTES', 5120, 256, 1_048_576),
      cacheMinSeconds,
      cacheMaxSeconds,
    }),
    keySets: Object.freeze({
      maxBytes: integer(env, 'CLIENT_JWKS_MAX_BYTES', 65_536, 1024, 1_048_576),
      refetchSeconds: duration(env, 'CLIENT_JWKS_REFETCH_SECONDS', 's', 10, 1, 3600),
    }),
    resources: Object.freeze(declaredResources(env).map((resource) => Object.freeze({ ...resource, scopes: Object.freeze([...resource.scopes]) }))),
  });
}
