/**
 * src/config.ts, the only reader of the environment: its defaults, a ConfigError naming the
 * variable for every bad value, production's demands, a frozen result; and `node dist/launch.cjs`
 * refusing to start on a bad value.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { loadConfig } from '../src/config.js';
import { buildDist } from './helpers/build.js';
import { configError } from './helpers/config-error.js';
import { tempDataDir } from './helpers/services.js';
import { runNode } from './helpers/run-node.js';

const KEY = 'k'.repeat(32);
/** 32 bytes as KEYS_ENCRYPTION_KEY takes them (`openssl rand -base64 32`). */
const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');
const PRODUCTION = {
  NODE_ENV: 'production', BASE_URL: 'https://auth.example.com', TRUST_PROXY: 'true', COOKIE_KEYS: KEY, KEYS_ENCRYPTION_KEY: ENCRYPTION_KEY,
};

describe('loadConfig defaults', () => {
  test('an empty environment is a development set-up on port 3000 with embedded stores', () => {
    expect(loadConfig({})).toEqual({
      nodeEnv: 'development',
      production: false,
      port: 3000,
      baseUrl: 'http://localhost:3000',
      secureCookies: false,
      databaseUrl: undefined,
      databaseBatching: 'turn',
      redisUrl: undefined,
      redisKeyPrefix: 'oauth:',
      dataDir: path.resolve('data'),
      accessTokenTtl: 3600,
      idTokenTtl: 3600,
      authorizationCodeTtl: 60,
      refreshTokenTtl: 1_209_600,
      tokenRateLimitPerMinute: 5,
      rateLimitPerMinute: 60,
      webhookRetryBaseMs: 30_000,
      webhookLeaseMs: 60_000,
      webhookAllowPrivateNetworks: false,
      cookieKeys: undefined,
      jwksFile: undefined,
      signingKeys: { encryptionKey: undefined, pollIntervalMs: 30_000, retireLeeway: 300 },
      trustProxy: { kind: 'none' },
      tls: undefined,
      timeouts: {
        redisCommandMs: 1000,
        redisConnectMs: 2000,
        databaseConnectMs: 2000,
        storesStartupMs: 60_000,
        databaseStatementMs: 2000,
        databaseIdleInTransactionMs: 10_000,
        shutdownDelayMs: 1000,
        shutdownMs: 10_000,
        adminTransactionMs: 300_000,
        webhookAttemptMs: 10_000,
        outboundLookupMs: 2000,
        httpHeadersMs: 10_000,
        httpRequestMs: 30_000,
        httpKeepAliveMs: 5000,
      },
      logLevel: 'info',
      metricsPort: undefined,
      metricsHost: '127.0.0.1',
      auditRetentionDays: 90,
      secretRotationGraceMs: 86_400_000,
      standardClients: {
        registrationInitialAccessToken: undefined,
        registrationClientCredentials: false,
        dynamicClientIdleDays: 30,
        metadataDocuments: { allowPrivateNetworks: false, timeoutMs: 5000, maxBytes: 5120, cacheMinSeconds: 30, cacheMaxSeconds: 86_400 },
        keySets: { maxBytes: 65_536, refetchSeconds: 10 },
        resources: [],
      },
      mail: { mode: 'log', smtpUrl: undefined, from: 'no-reply@localhost', passwordResetTtlMs: 1_800_000, emailVerificationTtlMs: 86_400_000, retryBaseMs: 30_000, timeoutMs: 10_000 },
    });
  });

  test('BASE_URL defaults to http://localhost:PORT', () => {
    expect(loadConfig({ PORT: '8080' }).baseUrl).toBe('http://localhost:8080');
  });

  test('the webhook claim defaults to 60 s or six attempts, whichever is longer', () => {
    expect(loadConfig({ WEBHOOK_ATTEMPT_TIMEOUT_MS: '5000' }).webhookLeaseMs).toBe(60_000);
    expect(loadConfig({ WEBHOOK_ATTEMPT_TIMEOUT_MS: '60000' }).webhookLeaseMs).toBe(360_000);
  });

  test('empty and blank values count as unset', () => {
    expect(loadConfig({ PORT: '', BASE_URL: '  ', ACCESS_TOKEN_TTL: '' })).toMatchObject({ port: 3000, baseUrl: 'http://localhost:3000', accessTokenTtl: 3600 });
  });

  test('every variable is read', () => {
    const config = loadConfig({
      PORT: '8443',
      BASE_URL: 'https://auth.example.com/',
      DATABASE_URL: 'postgresql://oauth@db:5432/oauth',
      REDIS_URL: 'rediss://cache:6380',
      REDIS_KEY_PREFIX: 'auth:',
      DATA_DIR: '/var/lib/oauth',
      DATABASE_BATCHING: 'Off',
      ACCESS_TOKEN_TTL: '600',
      ID_TOKEN_TTL: '900',
      AUTHORIZATION_CODE_TTL: '30',
      REFRESH_TOKEN_TTL: '86400',
      TOKEN_RATE_LIMIT_PER_MINUTE: '10',
      RATE_LIMIT_PER_MINUTE: '120',
      WEBHOOK_RETRY_BASE_MS: '500',
      WEBHOOK_ATTEMPT_TIMEOUT_MS: '2000',
      WEBHOOK_LEASE_MS: '5000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      COOKIE_KEYS: `${KEY}, ${'n'.repeat(40)}`,
      JWKS_FILE: '/etc/oauth/jwks.json',
      KEYS_ENCRYPTION_KEY: 'ab'.repeat(32),
      KEYS_POLL_INTERVAL_MS: '5000',
      KEYS_RETIRE_LEEWAY: '60',
      NODE_ENV: 'test',
      TRUST_PROXY: 'false',
      TLS_CERT_FILE: '/etc/oauth/cert.pem',
      TLS_KEY_FILE: '/etc/oauth/key.pem',
      REDIS_COMMAND_TIMEOUT_MS: '250',
      REDIS_CONNECT_TIMEOUT_MS: '500',
      DATABASE_CONNECT_TIMEOUT_MS: '750',
      STORES_STARTUP_TIMEOUT_MS: '0',
      OUTBOUND_LOOKUP_TIMEOUT_MS: '1500',
      DATABASE_STATEMENT_TIMEOUT_MS: '3000',
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '4000',
      SHUTDOWN_DELAY_MS: '2500',
      SHUTDOWN_TIMEOUT_MS: '0',
      ADMIN_TRANSACTION_TIMEOUT_MS: '60000',
      HTTP_HEADERS_TIMEOUT_MS: '3000',
      HTTP_REQUEST_TIMEOUT_MS: '6000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '1500',
      LOG_LEVEL: 'Debug',
      METRICS_PORT: '9464',
      METRICS_HOST: '10.0.0.7',
      AUDIT_RETENTION_DAYS: '365',
      CLIENT_SECRET_ROTATION_GRACE: '90m',
    });
    expect(config).toEqual({
      nodeEnv: 'test',
      production: false,
      port: 8443,
      baseUrl: 'https://auth.example.com', // an origin: no trailing slash, as the issuer
      secureCookies: true,
      databaseUrl: 'postgresql://oauth@db:5432/oauth',
      databaseBatching: 'off',
      redisUrl: 'rediss://cache:6380',
      redisKeyPrefix: 'auth:',
      dataDir: '/var/lib/oauth',
      accessTokenTtl: 600,
      idTokenTtl: 900,
      authorizationCodeTtl: 30,
      refreshTokenTtl: 86_400,
      tokenRateLimitPerMinute: 10,
      rateLimitPerMinute: 120,
      webhookRetryBaseMs: 500,
      webhookLeaseMs: 5000,
      webhookAllowPrivateNetworks: true,
      cookieKeys: [KEY, 'n'.repeat(40)],
      jwksFile: '/etc/oauth/jwks.json',
      signingKeys: { encryptionKey: Buffer.alloc(32, 0xab), pollIntervalMs: 5000, retireLeeway: 60 },
      trustProxy: { kind: 'none' },
      tls: { certFile: '/etc/oauth/cert.pem', keyFile: '/etc/oauth/key.pem' },
      timeouts: {
        redisCommandMs: 250,
        redisConnectMs: 500,
        databaseConnectMs: 750,
        storesStartupMs: 0,
        databaseStatementMs: 3000,
        databaseIdleInTransactionMs: 4000,
        shutdownDelayMs: 2500,
        shutdownMs: 0,
        adminTransactionMs: 60_000,
        webhookAttemptMs: 2000,
        outboundLookupMs: 1500,
        httpHeadersMs: 3000,
        httpRequestMs: 6000,
        httpKeepAliveMs: 1500,
      },
      logLevel: 'debug',
      metricsPort: 9464,
      metricsHost: '10.0.0.7',
      auditRetentionDays: 365,
      secretRotationGraceMs: 5_400_000,
      standardClients: expect.any(Object), // every one of its variables is read in test/config/standard-clients.test.ts
      mail: expect.any(Object), // test/config/mail.test.ts
    });
  });

  test('TRUST_PROXY: true/false/1/0 in any case (true is one hop), a number of hops, or the proxies\' addresses', () => {
    expect(loadConfig({ TRUST_PROXY: 'TRUE' }).trustProxy).toEqual({ kind: 'hops', hops: 1 });
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toEqual({ kind: 'hops', hops: 1 });
    expect(loadConfig({ TRUST_PROXY: 'False' }).trustProxy).toEqual({ kind: 'none' });
    expect(loadConfig({ TRUST_PROXY: '0' }).trustProxy).toEqual({ kind: 'none' });
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toEqual({ kind: 'hops', hops: 2 });
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.0.2.7,2001:db8::/32,loopback' }).trustProxy)
      .toEqual({ kind: 'addresses', addresses: ['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', 'loopback'] });
  });

  test('an https BASE_URL behind a trusted proxy gives Secure cookies', () => {
    expect(loadConfig({ BASE_URL: 'https://auth.example.com', TRUST_PROXY: 'true' })).toMatchObject({ secureCookies: true, trustProxy: { kind: 'hops', hops: 1 } });
  });
});

describe('every duration variable is written one way: 500ms, 30s, 5m, 1h, 7d, or a bare number in its own unit', () => {
  test.each<[string, string, (config: ReturnType<typeof loadConfig>) => number, number]>([
    ['ACCESS_TOKEN_TTL', '1h', (c) => c.accessTokenTtl, 3600],
    ['ACCESS_TOKEN_TTL', '3600', (c) => c.accessTokenTtl, 3600],
    ['AUTHORIZATION_CODE_TTL', '2m', (c) => c.authorizationCodeTtl, 120],
    ['REFRESH_TOKEN_TTL', '7d', (c) => c.refreshTokenTtl, 7 * 86_400],
    ['ID_TOKEN_TTL', '30000ms', (c) => c.idTokenTtl, 30],
    ['WEBHOOK_RETRY_BASE_MS', '500ms', (c) => c.webhookRetryBaseMs, 500],
    ['WEBHOOK_RETRY_BASE_MS', '30s', (c) => c.webhookRetryBaseMs, 30_000],
    ['WEBHOOK_RETRY_BASE_MS', '250', (c) => c.webhookRetryBaseMs, 250],
    ['REDIS_COMMAND_TIMEOUT_MS', '1s', (c) => c.timeouts.redisCommandMs, 1000],
    ['STORES_STARTUP_TIMEOUT_MS', '5m', (c) => c.timeouts.storesStartupMs, 300_000],
    ['ADMIN_TRANSACTION_TIMEOUT_MS', '1h', (c) => c.timeouts.adminTransactionMs, 3_600_000],
    ['KEYS_POLL_INTERVAL_MS', '45s', (c) => c.signingKeys.pollIntervalMs, 45_000],
    ['KEYS_RETIRE_LEEWAY', '5m', (c) => c.signingKeys.retireLeeway, 300],
    ['AUDIT_RETENTION_DAYS', '90d', (c) => c.auditRetentionDays, 90],
    ['AUDIT_RETENTION_DAYS', '48h', (c) => c.auditRetentionDays, 2],
    ['DYNAMIC_CLIENT_IDLE_DAYS', '7d', (c) => c.standardClients.dynamicClientIdleDays, 7],
    ['CLIENT_METADATA_CACHE_MAX_SECONDS', '1h', (c) => c.standardClients.metadataDocuments.cacheMaxSeconds, 3600],
    ['CLIENT_JWKS_REFETCH_SECONDS', '1m', (c) => c.standardClients.keySets.refetchSeconds, 60],
    ['CLIENT_SECRET_ROTATION_GRACE', '500ms', (c) => c.secretRotationGraceMs, 500],
    ['CLIENT_SECRET_ROTATION_GRACE', '7d', (c) => c.secretRotationGraceMs, 7 * 86_400_000],
  ])('%s=%s', (name, value, read, expected) => {
    expect(read(loadConfig({ [name]: value }))).toBe(expected);
  });

  test('a refusal says what a duration may be, in the variable\'s bounds', () => {
    expect(() => loadConfig({ ACCESS_TOKEN_TTL: '2d' })).toThrow(
      'ACCESS_TOKEN_TTL: must be a duration from 1s to 1d (such as 500ms, 30s, 5m, 1h, 7d; a bare number is seconds, and ms must make whole seconds), got "2d"');
    expect(() => loadConfig({ SHUTDOWN_DELAY_MS: 'soon' })).toThrow(
      'SHUTDOWN_DELAY_MS: must be a duration from 0 to 10m (such as 500ms, 30s, 5m, 1h, 7d; a bare number is milliseconds), got "soon"');
  });
});

describe('a bad value throws ConfigError naming the variable', () => {
  test.each<[string, Record<string, string>]>([
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '-1' }],
    ['PORT', { PORT: '65536' }],
    ['PORT', { PORT: '80.5' }],
    ['BASE_URL', { BASE_URL: 'not-a-url' }],
    ['BASE_URL', { BASE_URL: 'http://localhost:3000/auth' }],
    ['BASE_URL', { BASE_URL: 'http://localhost:3000/?x=1' }],
    ['BASE_URL', { BASE_URL: 'http://user:pass@localhost:3000' }],
    ['BASE_URL', { BASE_URL: 'ftp://localhost' }],
    ['DATABASE_BATCHING', { DATABASE_BATCHING: 'always' }],
    ['ACCESS_TOKEN_TTL', { ACCESS_TOKEN_TTL: '0' }],
    ['ACCESS_TOKEN_TTL', { ACCESS_TOKEN_TTL: 'an hour' }],
    ['ID_TOKEN_TTL', { ID_TOKEN_TTL: '0' }],
    ['ID_TOKEN_TTL', { ID_TOKEN_TTL: '1.5h' }],
    ['ID_TOKEN_TTL', { ID_TOKEN_TTL: '1500ms' }], // not a whole number of seconds
    ['ID_TOKEN_TTL', { ID_TOKEN_TTL: '2d' }], // above its 1d bound
    ['ID_TOKEN_TTL', { ID_TOKEN_TTL: '1 h' }],
    ['ID_TOKEN_TTL', { ID_TOKEN_TTL: '1H' }],
    ['KEYS_ENCRYPTION_KEY', { KEYS_ENCRYPTION_KEY: 'too short' }],
    ['KEYS_ENCRYPTION_KEY', { KEYS_ENCRYPTION_KEY: 'ab'.repeat(31) }], // 31 bytes
    ['KEYS_ENCRYPTION_KEY', { KEYS_ENCRYPTION_KEY: `${'x'.repeat(42)}!` }],
    ['KEYS_POLL_INTERVAL_MS', { KEYS_POLL_INTERVAL_MS: '99' }],
    // Every instance must pick a rotation up within a minute.
    ['KEYS_POLL_INTERVAL_MS', { KEYS_POLL_INTERVAL_MS: '60001' }],
    ['KEYS_RETIRE_LEEWAY', { KEYS_RETIRE_LEEWAY: '-1' }],
    ['AUTHORIZATION_CODE_TTL', { AUTHORIZATION_CODE_TTL: '0' }],
    ['AUTHORIZATION_CODE_TTL', { AUTHORIZATION_CODE_TTL: '3600' }],
    ['REFRESH_TOKEN_TTL', { REFRESH_TOKEN_TTL: '0' }],
    ['TOKEN_RATE_LIMIT_PER_MINUTE', { TOKEN_RATE_LIMIT_PER_MINUTE: '0' }],
    ['RATE_LIMIT_PER_MINUTE', { RATE_LIMIT_PER_MINUTE: 'many' }],
    ['WEBHOOK_RETRY_BASE_MS', { WEBHOOK_RETRY_BASE_MS: '0' }],
    ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'yes' }],
    ['WEBHOOK_ATTEMPT_TIMEOUT_MS', { WEBHOOK_ATTEMPT_TIMEOUT_MS: '99' }],
    ['WEBHOOK_ATTEMPT_TIMEOUT_MS', { WEBHOOK_ATTEMPT_TIMEOUT_MS: '60001' }],
    ['WEBHOOK_LEASE_MS', { WEBHOOK_LEASE_MS: '999' }],
    ['WEBHOOK_LEASE_MS', { WEBHOOK_LEASE_MS: 'a minute' }],
    // A claim must outlast its attempt and its recording, or a second worker could send the message meanwhile.
    ['WEBHOOK_LEASE_MS', { WEBHOOK_LEASE_MS: '10000' }],
    ['WEBHOOK_LEASE_MS', { WEBHOOK_ATTEMPT_TIMEOUT_MS: '5000', WEBHOOK_LEASE_MS: '4000' }],
    ['WEBHOOK_LEASE_MS', { WEBHOOK_ATTEMPT_TIMEOUT_MS: '5000', WEBHOOK_LEASE_MS: '9999' }],
    ['AUDIT_RETENTION_DAYS', { AUDIT_RETENTION_DAYS: '0' }],
    ['AUDIT_RETENTION_DAYS', { AUDIT_RETENTION_DAYS: '36h' }], // not a whole number of days
    ['AUDIT_RETENTION_DAYS', { AUDIT_RETENTION_DAYS: '1w' }],
    ['CLIENT_SECRET_ROTATION_GRACE', { CLIENT_SECRET_ROTATION_GRACE: 'a day' }],
    ['CLIENT_SECRET_ROTATION_GRACE', { CLIENT_SECRET_ROTATION_GRACE: '15' }], // seconds or minutes?
    ['CLIENT_SECRET_ROTATION_GRACE', { CLIENT_SECRET_ROTATION_GRACE: '-1h' }],
    ['CLIENT_SECRET_ROTATION_GRACE', { CLIENT_SECRET_ROTATION_GRACE: '1.5h' }],
    ['CLIENT_SECRET_ROTATION_GRACE', { CLIENT_SECRET_ROTATION_GRACE: '31d' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }],
    ['DATABASE_URL', { DATABASE_URL: 'not a url' }],
    ['REDIS_URL', { REDIS_URL: 'http://x' }],
    ['NODE_ENV', { NODE_ENV: 'staging' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'maybe' }],
    ['TRUST_PROXY', { TRUST_PROXY: '11' }],
    ['TRUST_PROXY', { TRUST_PROXY: '10.0.0.0/33' }],
    ['TRUST_PROXY', { TRUST_PROXY: '10.0.0.1 10.0.0.2' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'proxy.internal' }],
    // Over TLS the service is reached over https: an http BASE_URL would refuse every request.
    ['BASE_URL', { TLS_CERT_FILE: '/c.pem', TLS_KEY_FILE: '/k.pem' }],
    ['COOKIE_KEYS', { COOKIE_KEYS: 'short' }],
    ['COOKIE_KEYS', { COOKIE_KEYS: `${KEY},short` }],
    ['TLS_KEY_FILE', { TLS_CERT_FILE: '/etc/oauth/cert.pem' }],
    ['TLS_CERT_FILE', { TLS_KEY_FILE: '/etc/oauth/key.pem' }],
    ['REDIS_KEY_PREFIX', { REDIS_KEY_PREFIX: 'has spaces' }],
    ['REDIS_COMMAND_TIMEOUT_MS', { REDIS_COMMAND_TIMEOUT_MS: '0' }],
    ['REDIS_CONNECT_TIMEOUT_MS', { REDIS_CONNECT_TIMEOUT_MS: 'soon' }],
    ['DATABASE_CONNECT_TIMEOUT_MS', { DATABASE_CONNECT_TIMEOUT_MS: '60001' }],
    ['STORES_STARTUP_TIMEOUT_MS', { STORES_STARTUP_TIMEOUT_MS: '3600001' }],
    ['OUTBOUND_LOOKUP_TIMEOUT_MS', { OUTBOUND_LOOKUP_TIMEOUT_MS: '5' }],
    ['DATABASE_STATEMENT_TIMEOUT_MS', { DATABASE_STATEMENT_TIMEOUT_MS: '1.5' }],
    ['DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', { DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '-5' }],
    ['SHUTDOWN_TIMEOUT_MS', { SHUTDOWN_TIMEOUT_MS: 'ten seconds' }],
    ['SHUTDOWN_DELAY_MS', { SHUTDOWN_DELAY_MS: '1e3' }],
    ['ADMIN_TRANSACTION_TIMEOUT_MS', { ADMIN_TRANSACTION_TIMEOUT_MS: '999' }],
    ['HTTP_HEADERS_TIMEOUT_MS', { HTTP_HEADERS_TIMEOUT_MS: '50' }],
    ['HTTP_REQUEST_TIMEOUT_MS', { HTTP_REQUEST_TIMEOUT_MS: 'never' }],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', { HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' }],
    // Node refuses a headers timeout longer than the request timeout.
    ['HTTP_HEADERS_TIMEOUT_MS', { HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'verbose' }],
    ['METRICS_PORT', { METRICS_PORT: '65536' }],
    ['METRICS_PORT', { METRICS_PORT: 'metrics' }],
    ['METRICS_PORT', { PORT: '3000', METRICS_PORT: '3000' }],
    ['METRICS_HOST', { METRICS_HOST: 'metrics.internal' }],
    ['METRICS_HOST', { METRICS_HOST: '0.0.0.0:9100' }],
    // https without TLS or a trusted proxy could never set a Secure cookie.
    ['TRUST_PROXY', { BASE_URL: 'https://auth.example.com' }],
  ])('%s in %j', (variable, env) => {
    const error = configError(env);
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
    expect(error.name).toBe('ConfigError');
  });
});

describe('NODE_ENV=production', () => {
  test('accepts an https BASE_URL with COOKIE_KEYS and KEYS_ENCRYPTION_KEY; JWKS_FILE is optional (it seeds the keys)', () => {
    expect(loadConfig(PRODUCTION)).toMatchObject({ nodeEnv: 'production', production: true, secureCookies: true, jwksFile: undefined });
    expect(loadConfig({ ...PRODUCTION, JWKS_FILE: '/etc/oauth/jwks.json' }).jwksFile).toBe('/etc/oauth/jwks.json');
  });

  test('requires an https BASE_URL', () => {
    expect(configError({ ...PRODUCTION, BASE_URL: 'http://auth.example.com' }).variable).toBe('BASE_URL');
    const { BASE_URL: _, ...withoutBase } = PRODUCTION; // the default is http://localhost
    expect(configError(withoutBase).variable).toBe('BASE_URL');
  });

  test('requires COOKIE_KEYS', () => {
    const { COOKIE_KEYS: _, ...env } = PRODUCTION;
    const error = configError(env);
    expect(error.variable).toBe('COOKIE_KEYS');
    expect(error.message).toMatch(/COOKIE_KEYS.*required/);
  });

  test('requires KEYS_ENCRYPTION_KEY', () => {
    const { KEYS_ENCRYPTION_KEY: _, ...env } = PRODUCTION;
    const error = configError(env);
    expect(error.variable).toBe('KEYS_ENCRYPTION_KEY');
    expect(error.message).toMatch(/KEYS_ENCRYPTION_KEY.*required/);
  });
});

describe('KEYS_ENCRYPTION_KEY', () => {
  test('takes 32 bytes as hex, base64 or base64url', () => {
    const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => 250 - i * 3));
    for (const text of [bytes.toString('hex'), bytes.toString('hex').toUpperCase(), bytes.toString('base64'), bytes.toString('base64url'), ` ${bytes.toString('base64')}\n`]) {
      expect(loadConfig({ KEYS_ENCRYPTION_KEY: text }).signingKeys.encryptionKey).toEqual(bytes);
    }
  });

  test('a bad value is refused without being repeated', () => {
    const secret = `${'s3cr3t'.repeat(7)}`;
    const error = configError({ KEYS_ENCRYPTION_KEY: secret });
    expect(error.message).toMatch(/32 random bytes/);
    expect(error.message).not.toContain(secret);
  });
});

describe('the result', () => {
  test('is frozen, nested values included', () => {
    const config = loadConfig({ ...PRODUCTION, TLS_CERT_FILE: '/c.pem', TLS_KEY_FILE: '/k.pem' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.cookieKeys)).toBe(true);
    expect(Object.isFrozen(config.tls)).toBe(true);
    expect(Object.isFrozen(config.signingKeys)).toBe(true);
    expect(() => { (config as { port: number }).port = 1; }).toThrow(TypeError);
  });

  test('does not change when the environment does', () => {
    const env: Record<string, string> = { PORT: '4000' };
    const config = loadConfig(env);
    env.PORT = '5000';
    expect(config.port).toBe(4000);
  });
});

describe('node dist/launch.cjs', () => {
  let dataDir: string;
  beforeAll(async () => {
    await buildDist();
    dataDir = tempDataDir('oauth-config-test');
  }, 120_000);
  afterAll(() => { if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true }); });

  test.each<[string, Record<string, string>]>([
    ['PORT', { PORT: 'abc' }],
    ['BASE_URL', { BASE_URL: 'http://localhost:3000/auth' }],
    ['NODE_ENV', { NODE_ENV: 'staging' }],
    ['COOKIE_KEYS', { NODE_ENV: 'production', BASE_URL: 'https://auth.example.com', TRUST_PROXY: 'true' }],
    ['KEYS_ENCRYPTION_KEY', { NODE_ENV: 'production', BASE_URL: 'https://auth.example.com', TRUST_PROXY: 'true', COOKIE_KEYS: KEY }],
  ])('exits non-zero naming %s, without starting', async (variable, env) => {
    const run = await runNode('dist/launch.cjs', [], { DATA_DIR: dataDir, ...env }, 30_000);
    expect(run.timedOut).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(variable);
    expect(run.stderr).not.toMatch(/^\s+at /m); // a message, not a stack trace
    expect(run.stdout).not.toMatch(/OAuth service at/);
  });

  test('exits non-zero naming TLS_CERT_FILE when the certificate cannot be read', async () => {
    const run = await runNode('dist/launch.cjs', [], {
      DATA_DIR: dataDir, PORT: '0', BASE_URL: 'https://localhost', TLS_CERT_FILE: path.join(dataDir, 'missing-cert.pem'), TLS_KEY_FILE: path.join(dataDir, 'missing-key.pem'),
    }, 30_000);
    expect(run.timedOut).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('TLS_CERT_FILE');
    expect(run.stdout).not.toMatch(/OAuth service at/);
  });

  test('exits non-zero naming JWKS_FILE when the key set cannot be read', async () => {
    const run = await runNode('dist/launch.cjs', [], {
      ...PRODUCTION, DATA_DIR: dataDir, PORT: '0', JWKS_FILE: path.join(dataDir, 'missing-jwks.json'),
    }, 60_000);
    expect(run.timedOut).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('JWKS_FILE');
    expect(run.stdout).not.toMatch(/OAuth service at/);
  }, 90_000); // it opens the embedded database first, whose first start takes a while
});
