/**
 * The only reader of `process.env` (but `UV_THREADPOOL_SIZE`, set by src/launch.cts before the
 * thread pool starts). Parses and validates it once into a frozen, typed object;
 * a bad value stops start-up with a message naming the variable.
 *
 * @example const config = loadConfig(process.env);
 */
import net from 'node:net';
import path from 'node:path';
import { dataTier } from './config/data-tier.js';
import type { DataTier, RedisSentinel } from './config/data-tier.js';
import { requireGrace } from './config/durations.js';
import { boolean, ConfigError, duration, integer, read, url } from './config/env.js';
import { proxyTrust } from './config/proxy.js';
import type { ProxyTrust } from './config/proxy.js';
import type { Env } from './config/env.js';
import { mailConfig } from './config/mail.js';
import type { MailConfig } from './config/mail.js';
import { signingKeyConfig } from './config/signing-keys.js';
import type { SigningKeyConfig } from './config/signing-keys.js';
import { standardClients } from './config/standard-clients.js';
import type { StandardClients } from './config/standard-clients.js';

export { ConfigError };
export type { DataTier, MailConfig, ProxyTrust, RedisSentinel, SigningKeyConfig, StandardClients };
export { encryptionKeyOf } from './config/signing-keys.js';

/** pino's levels, most severe first, and `silent`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Whether the request path's statements carry the lookups and writes of every request made in
 * one turn of the event loop (`turn`, the default: an A/B in one bench run shows it pays on
 * PostgreSQL and on the embedded database, docs/performance.md) or each request's alone (`off`).
 */
export type DatabaseBatching = 'turn' | 'off';

/** Every setting; the data tier's, the signing keys' and the standard clients' are read in src/config/. */
export interface Config extends DataTier {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly production: boolean;
  readonly port: number;
  /** Public base URL; also the issuer (RFC 9207 `iss`), so no trailing slash and no path. */
  readonly baseUrl: string;
  readonly secureCookies: boolean;
  /** Postgres connection string; unset = embedded PGlite under `dataDir`. */
  readonly databaseUrl: string | undefined;
  /** DATABASE_BATCHING: see {@link DatabaseBatching}. */
  readonly databaseBatching: DatabaseBatching;
  /** Redis connection string; unset = in-process stores (or Redis through `redisSentinel`). */
  readonly redisUrl: string | undefined;
  readonly redisKeyPrefix: string;
  readonly dataDir: string;
  readonly accessTokenTtl: number;
  /** ID token lifetime in seconds (the provider's `ttl.IdToken`). */
  readonly idTokenTtl: number;
  readonly authorizationCodeTtl: number;
  /** Absolute refresh-token lifetime in seconds, counted from the code exchange. */
  readonly refreshTokenTtl: number;
  /** Requests a minute to each token-issuing endpoint (per key). */
  readonly tokenRateLimitPerMinute: number;
  /** Requests a minute to every other limited endpoint (per key). */
  readonly rateLimitPerMinute: number;
  /** Delay before the first webhook retry; each later retry doubles it. */
  readonly webhookRetryBaseMs: number;
  /**
   * How long a worker's claim on an outbox message lasts: longer than an attempt may take, so no
   * other worker sends it meanwhile; a message whose worker died is sent again once it expires.
   */
  readonly webhookLeaseMs: number;
  /** Allow webhook URLs on loopback and private networks (never link-local or metadata). */
  readonly webhookAllowPrivateNetworks: boolean;
  /** Keys that sign cookies, newest first; unset outside production = generated under `dataDir`. */
  readonly cookieKeys: readonly string[] | undefined;
  /** Path to a private JWKS that seeds the signing keys on first start (docs/signing-keys.md). */
  readonly jwksFile: string | undefined;
  readonly signingKeys: SigningKeyConfig;
  /** TRUST_PROXY: whose X-Forwarded-For and -Proto are believed (config/proxy.ts). */
  readonly trustProxy: ProxyTrust;
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
  /** How long each store may take before a request gives up on it (see {@link Timeouts}). */
  readonly timeouts: Timeouts;
  /** LOG_LEVEL: the least severe level written. */
  readonly logLevel: LogLevel;
  /** METRICS_PORT: where `/metrics` is served on its own listener; unset = no metrics listener. */
  readonly metricsPort: number | undefined;
  /** METRICS_HOST: the address that listener listens on (loopback unless opened to a scraper). */
  readonly metricsHost: string;
  /** AUDIT_RETENTION_DAYS: audit rows older than this are deleted by the cleanup job. */
  readonly auditRetentionDays: number;
  /** CLIENT_SECRET_ROTATION_GRACE: how long a rotated client or webhook secret keeps working, unless a rotation says (docs/rotating-credentials.md). */
  readonly secretRotationGraceMs: number;
  /** Clients that bring themselves (RFC 7591, metadata documents) and declared resources: see {@link StandardClients}. */
  readonly standardClients: StandardClients;
  /** SMTP_URL, MAIL_FROM and the mailed links' lifetimes: see {@link MailConfig}. */
  readonly mail: MailConfig;
}

/**
 * Time bounds on every dependency call, in milliseconds. A store that is down, hung or
 * refusing costs a request at most its bound (plus a small margin), then a 503.
 */
export interface Timeouts {
  /** A Redis call, from when it is made to its answer (the Redis guard; ioredis's `commandTimeout`, twice it, is a backstop). */
  readonly redisCommandMs: number;
  /** Opening a Redis connection (ioredis `connectTimeout`). */
  readonly redisConnectMs: number;
  /** Opening a Postgres connection, and waiting for one from the pool. */
  readonly databaseConnectMs: number;
  /**
   * At start-up, how long PostgreSQL and Redis that do not answer yet are waited for, one attempt
   * a second (each bounded as above), before the service gives up and exits (store/startup-wait.ts).
   */
  readonly storesStartupMs: number;
  /** One SQL statement (server `statement_timeout`; the client gives up shortly after). */
  readonly databaseStatementMs: number;
  /** A transaction left idle by its client (server `idle_in_transaction_session_timeout`). */
  readonly databaseIdleInTransactionMs: number;
  /**
   * How long a stopping instance goes on answering (readiness 503, `Connection: close`) before
   * it stops accepting connections, so that load balancers take it out of rotation first.
   */
  readonly shutdownDelayMs: number;
  /** How long a stopping instance then waits for requests in flight before it closes anyway. */
  readonly shutdownMs: number;
  /**
   * How long a client may take to send a request's headers (Node `headersTimeout`), the whole
   * request (`requestTimeout`), and how long an idle keep-alive connection stays open
   * (`keepAliveTimeout`): slow or unfinished requests cannot hold connections for ever.
   */
  readonly httpHeadersMs: number;
  readonly httpRequestMs: number;
  readonly httpKeepAliveMs: number;
  /**
   * How long one change of the administration CLI may hold its transaction: ending every grant
   * of a client with thousands of users writes a webhook event and an audit row for each.
   */
  readonly adminTransactionMs: number;
  /** One webhook attempt: DNS, connect, send, response headers (docs/webhooks.md "Delivery"). */
  readonly webhookAttemptMs: number;
  /** One name lookup of an outbound request (webhooks, metadata documents), within its request's own bound (src/outbound/host-lookup.ts). */
  readonly outboundLookupMs: number;
}


function baseUrl(env: Env, port: number): string {
  const raw = url(env, 'BASE_URL', ['http:', 'https:']) ?? `http://localhost:${port}`;
  const parsed = new URL(raw);
  if (parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username || parsed.password) {
    throw new ConfigError('BASE_URL', 'must be an origin such as https://auth.example.com (no path, query or credentials)');
  }
  return parsed.origin;
}

function cookieKeys(env: Env): string[] | undefined {
  const raw = read(env, 'COOKIE_KEYS');
  if (raw === undefined) return undefined;
  const keys = raw.split(',').map((key) => key.trim());
  if (keys.some((key) => key.length < 32)) {
    throw new ConfigError('COOKIE_KEYS', 'must be a comma-separated list of keys, each at least 32 characters');
  }
  return keys;
}

function databaseBatching(env: Env): DatabaseBatching {
  const raw = read(env, 'DATABASE_BATCHING')?.toLowerCase() ?? 'turn';
  if (raw !== 'turn' && raw !== 'off') throw new ConfigError('DATABASE_BATCHING', `must be turn or off, got "${raw}"`);
  return raw;
}

function rotationGrace(env: Env): number {
  return requireGrace(read(env, 'CLIENT_SECRET_ROTATION_GRACE') ?? '24h', (problem) => new ConfigError('CLIENT_SECRET_ROTATION_GRACE', problem));
}

function logLevel(env: Env): LogLevel {
  const raw = read(env, 'LOG_LEVEL')?.toLowerCase() ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return raw as LogLevel;
}

/** Node refuses a headers timeout above the request timeout, so the pair is checked together. */
function httpTimeouts(env: Env): Pick<Timeouts, 'httpHeadersMs' | 'httpRequestMs' | 'httpKeepAliveMs'> {
  const httpHeadersMs = duration(env, 'HTTP_HEADERS_TIMEOUT_MS', 'ms', 10_000, 100, 600_000);
  const httpRequestMs = duration(env, 'HTTP_REQUEST_TIMEOUT_MS', 'ms', 30_000, 100, 600_000);
  if (httpHeadersMs > httpRequestMs) throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${httpRequestMs})`);
  return { httpHeadersMs, httpRequestMs, httpKeepAliveMs: duration(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 'ms', 5000, 100, 600_000) };
}

/**
 * A claim must outlast the attempt it covers and the recording of its outcome, or a second worker
 * could send a message while the first still waits for its answer (docs/webhooks.md,
 * "Delivery": claiming): at least twice the attempt's limit; unset, 60 s or six attempts, whichever is longer.
 */
function webhookTimes(env: Env): { webhookAttemptMs: number; webhookLeaseMs: number } {
  const webhookAttemptMs = duration(env, 'WEBHOOK_ATTEMPT_TIMEOUT_MS', 'ms', 10_000, 100, 60_000);
  const webhookLeaseMs = duration(env, 'WEBHOOK_LEASE_MS', 'ms', Math.max(60_000, 6 * webhookAttemptMs), 1000, 3_600_000);
  if (webhookLeaseMs < 2 * webhookAttemptMs) {
    throw new ConfigError('WEBHOOK_LEASE_MS', `must be at least twice WEBHOOK_ATTEMPT_TIMEOUT_MS (${webhookAttemptMs}): the attempt, then recording its outcome`);
  }
  return { webhookAttemptMs, webhookLeaseMs };
}

/** Parses the environment. Throws {@link ConfigError} naming the first bad variable. */
export function loadConfig(env: Env): Config {
  const nodeEnvRaw = read(env, 'NODE_ENV') ?? 'development';
  if (nodeEnvRaw !== 'development' && nodeEnvRaw !== 'production' && nodeEnvRaw !== 'test') {
    throw new ConfigError('NODE_ENV', `must be development, production or test, got "${nodeEnvRaw}"`);
  }
  const production = nodeEnvRaw === 'production';
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const base = baseUrl(env, port);
  const https = base.startsWith('https:');

  const certFile = read(env, 'TLS_CERT_FILE');
  const keyFile = read(env, 'TLS_KEY_FILE');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(certFile === undefined ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE', 'TLS_CERT_FILE and TLS_KEY_FILE go together');
  }
  const tls = certFile && keyFile ? Object.freeze({ certFile, keyFile }) : undefined;
  const trustProxy = proxyTrust(env);

  const keys = cookieKeys(env);
  const jwksFile = read(env, 'JWKS_FILE');
  if (production) {
    if (!https) throw new ConfigError('BASE_URL', 'must be https when NODE_ENV=production');
    if (keys === undefined) throw new ConfigError('COOKIE_KEYS', 'is required when NODE_ENV=production');
  }
  // Secure cookies can only be set on a request Koa sees as https: ours or a trusted proxy's.
  if (https && !tls && trustProxy.kind === 'none') {
    throw new ConfigError('TRUST_PROXY', 'BASE_URL is https: set TRUST_PROXY (true, a number of hops or the proxies\' addresses) behind a TLS-terminating proxy, or TLS_CERT_FILE and TLS_KEY_FILE');
  }
  // Requests must come over BASE_URL's scheme (http/responses.ts `requireScheme`): over TLS, that is https.
  if (!https && tls) throw new ConfigError('BASE_URL', 'must be https when TLS_CERT_FILE and TLS_KEY_FILE are set: the service is reached over https');

  const redisKeyPrefix = read(env, 'REDIS_KEY_PREFIX') ?? 'oauth:';
  if (!/^[\w:.-]{1,64}$/.test(redisKeyPrefix)) {
    throw new ConfigError('REDIS_KEY_PREFIX', 'must be 1-64 characters of letters, digits, _ : . -');
  }

  const { webhookAttemptMs, webhookLeaseMs } = webhookTimes(env);

  const metricsPort = read(env, 'METRICS_PORT') === undefined ? undefined : integer(env, 'METRICS_PORT', 0, 0, 65535);
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port}): metrics are not served to the public`);
  }

  // /metrics has no authentication and names clients: it listens on loopback unless told.
  const metricsHost = read(env, 'METRICS_HOST') ?? '127.0.0.1';
  if (net.isIP(metricsHost) === 0) {
    throw new ConfigError('METRICS_HOST', `must be an IP address to listen on (127.0.0.1, 0.0.0.0, ::), got "${metricsHost}"`);
  }

  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const redisUrl = url(env, 'REDIS_URL', ['redis:', 'rediss:']);

  return Object.freeze({
    logLevel: logLevel(env),
    metricsPort,
    metricsHost,
    nodeEnv: nodeEnvRaw,
    production,
    port,
    baseUrl: base,
    secureCookies: https,
    databaseUrl,
    databaseBatching: databaseBatching(env),
    redisUrl,
    ...dataTier(env, databaseUrl, redisUrl),
    redisKeyPrefix,
    dataDir: path.resolve(read(env, 'DATA_DIR') ?? 'data'),
    accessTokenTtl: duration(env, 'ACCESS_TOKEN_TTL', 's', 3600, 1, 86_400),
    idTokenTtl: duration(env, 'ID_TOKEN_TTL', 's', 3600, 1, 86_400),
    authorizationCodeTtl: duration(env, 'AUTHORIZATION_CODE_TTL', 's', 60, 1, 600),
    refreshTokenTtl: duration(env, 'REFRESH_TOKEN_TTL', 's', 14 * 86_400, 1, 366 * 86_400),
    tokenRateLimitPerMinute: integer(env, 'TOKEN_RATE_LIMIT_PER_MINUTE', 5, 1, 1_000_000),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 60, 1, 1_000_000),
    webhookRetryBaseMs: duration(env, 'WEBHOOK_RETRY_BASE_MS', 'ms', 30_000, 1, 3_600_000),
    webhookLeaseMs,
    webhookAllowPrivateNetworks: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'),
    auditRetentionDays: duration(env, 'AUDIT_RETENTION_DAYS', 'd', 90, 1, 36_500),
    secretRotationGraceMs: rotationGrace(env),
    standardClients: standardClients(env),
    mail: mailConfig(env, base, databaseUrl),
    cookieKeys: keys ? Object.freeze(keys) : undefined,
    jwksFile,
    signingKeys: signingKeyConfig(env, production),
    trustProxy,
    tls,
    timeouts: Object.freeze({
      redisCommandMs: duration(env, 'REDIS_COMMAND_TIMEOUT_MS', 'ms', 1000, 10, 60_000),
      redisConnectMs: duration(env, 'REDIS_CONNECT_TIMEOUT_MS', 'ms', 2000, 10, 60_000),
      databaseConnectMs: duration(env, 'DATABASE_CONNECT_TIMEOUT_MS', 'ms', 2000, 10, 60_000),
      storesStartupMs: duration(env, 'STORES_STARTUP_TIMEOUT_MS', 'ms', 60_000, 0, 3_600_000),
      databaseStatementMs: duration(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 'ms', 2000, 10, 600_000),
      databaseIdleInTransactionMs: duration(env, 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 'ms', 10_000, 10, 600_000),
      shutdownDelayMs: duration(env, 'SHUTDOWN_DELAY_MS', 'ms', 1000, 0, 600_000),
      shutdownMs: duration(env, 'SHUTDOWN_TIMEOUT_MS', 'ms', 10_000, 0, 600_000),
      adminTransactionMs: duration(env, 'ADMIN_TRANSACTION_TIMEOUT_MS', 'ms', 300_000, 1000, 3_600_000),
      webhookAttemptMs,
      outboundLookupMs: duration(env, 'OUTBOUND_LOOKUP_TIMEOUT_MS', 'ms', 2000, 10, 60_000),
      ...httpTimeouts(env),
    }),
  });
}
