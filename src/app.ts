/**
 * The composition root: the only module that knows every part. It opens the stores, builds
 * the provider and the pages, and declares the middleware order.
 *
 * @example const app = await createApp(loadConfig(process.env)); http.createServer(app.callback());
 */
import type http from 'node:http';
import Koa from 'koa';
import type { Context } from 'koa';
import mount from 'koa-mount';
import type Provider from 'oidc-provider';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { specErrorCode, specStatus } from './errors.js';
import { createLoginGuard } from './accounts/login-guard.js';
import { createUserStore } from './accounts/user-store.js';
import type { UserStore } from './accounts/user-store.js';
import { createClientStore } from './clients/client-store.js';
import type { ClientStore } from './clients/client-store.js';
import { createClientSettings } from './clients/client-settings.js';
import { createAuditLog } from './audit/audit-log.js';
import { auditedChanges } from './audit/audited-changes.js';
import { providerAudit } from './audit/provider-audit.js';
import { isWellFormedClientId, verifyClientSecret } from './clients/secret.js';
import { dynamicRegistration } from './clients/dynamic-registration.js';
import { guardedFetch } from './clients/metadata-fetch.js';
import { clientUsage } from './clients/client-usage.js';
import { deleteIdleClients } from './clients/idle-clients.js';
import { isMetadataDocumentClientId, metadataFetchReason } from './clients/metadata-document.js';
import { openDatabase } from './store/database.js';
import type { Database } from './store/database.js';
import { startCleanup } from './store/cleanup.js';
import { createResourceStore } from './resources/resource-store.js';
import { HUNG_PAUSE_MS, storeGuard } from './store/store-failure.js';
import { clientHasWebhooks, createHotReads } from './store/hot-reads.js';
import { pendingWrites, requestMemo, sendWrites } from './store/request-memo.js';
import type { Write } from './store/write-batch.js';
import { createLimiterFactory } from './store/limiter.js';
import { migrate } from './store/migrate.js';
import { connectRedis } from './store/redis.js';
import { loadKeys } from './store/keys.js';
import { createAdapterFactory } from './oidc/adapter.js';
import { createAuthorizedApps } from './oidc/authorized-apps.js';
import { checkRegisteredMetadata, clientAdapter } from './oidc/client-adapter.js';
import { createFindAccount } from './oidc/find-account.js';
import { loginSessions } from './oidc/login-session.js';
import { memoryAdapters } from './oidc/memory-adapter.js';
import { postgresAdapters } from './oidc/postgres-adapter.js';
import { createProvider } from './oidc/provider.js';
import { redisAdapters } from './oidc/redis-adapter.js';
import { DISCOVERY_PATHS, ROUTES, TOKEN_ISSUING_PATHS } from './oidc/routes.js';
import { specGlue } from './oidc/spec-glue.js';
import { jwtIntrospection } from './oidc/jwt-introspection.js';
import { tokenLookAhead } from './oidc/token-look-ahead.js';
import { accessLog } from './http/access-log.js';
import { parseBody } from './http/body.js';
import { handleErrors } from './http/handle-errors.js';
import { health, HEALTH_PATH, LIVE_PATH, READY_PATH } from './http/health.js';
import { OPENAPI_PATH, openapiDocument } from './http/openapi-document.js';
import { requestId } from './http/request-id.js';
import { createLogger, errorLog } from './ops/logger.js';
import { createMetrics } from './ops/metrics.js';
import type { Metrics } from './ops/metrics.js';
import { startMetricsServer } from './ops/metrics-server.js';
import type { MetricsServer } from './ops/metrics-server.js';
import type { Logger as OpsLogger } from './ops/logger.js';
import { trackInFlight } from './http/in-flight.js';
import { exactPaths } from './http/exact-paths.js';
import { rateLimit, tokenAdmission } from './http/rate-limit.js';
import { securityHeaders } from './http/security-headers.js';
import { staticAssets } from './http/static-assets.js';
import { APPLICATIONS_PATH, applicationsRoutes } from './ui/applications.js';
import { consentView } from './ui/consent-view.js';
import type { ClientOrigin } from './ui/consent-view.js';
import { createErrorResponder } from './ui/error-page.js';
import { interactionRoutes } from './ui/interactions.js';
import { REGISTER_PATH, registerRoutes } from './ui/register.js';
import { settingsRoutes } from './ui/settings.js';
import { SETTINGS_PATH } from './ui/settings-session.js';
import { createViews, VIEWS_DIR } from './ui/views.js';
import { revocationAnnouncer } from './webhooks/application-events.js';
import { providerEvents } from './webhooks/provider-events.js';
import { createWebhookService } from './webhooks/webhook-service.js';
import type { WebhookService } from './webhooks/webhook-service.js';
import { WEBHOOKS_PATH, webhooksApi } from './webhooks/webhooks-api.js';

export interface App {
  readonly koa: Koa;
  readonly provider: Provider;
  readonly db: Database;
  readonly redis: Redis | undefined;
  readonly users: UserStore;
  readonly clients: ClientStore;
  readonly webhooks: WebhookService;
  /** Where the app writes its access and error lines (issue 11 "Operable in production"). */
  readonly logger: OpsLogger;
  /** This app's metrics (its own registry), counted and served with METRICS_PORT only. */
  readonly metrics: Metrics;
  /** The port the metrics listener listens on; undefined when METRICS_PORT is unset (no listener). */
  readonly metricsPort: number | undefined;
  callback(): http.RequestListener;
  /** Shutdown, first step: readiness answers 503 and responses ask clients to reconnect elsewhere. */
  startDraining(): void;
  /** Resolves true once no request is in flight (hung-up clients' included), false after `timeoutMs`. */
  settled(timeoutMs: number): Promise<boolean>;
  /**
   * Shutdown, last step: waits for requests in flight, at most `timeoutMs` (SHUTDOWN_TIMEOUT_MS by
   * default), then stops the webhook worker and the cleanup job, and only then closes the pools.
   * Resolves false when requests were still running at the deadline.
   */
  close(options?: { timeoutMs?: number }): Promise<boolean>;
}

/** Receives the errors the app meets, with the request's context when a request failed. */
export type Logger = (error: unknown, ctx?: Context) => void;

/**
 * `logging`: the process's logger (src/main.ts creates it), which gets access and error lines;
 * or only an error callback (some tests), and then no access lines are written.
 */
export async function createApp(config: Config, logging: OpsLogger | Logger = createLogger({ level: config.logLevel })): Promise<App> {
  const logger = typeof logging === 'function' ? createLogger({ level: 'silent' }) : logging;
  const log: Logger = typeof logging === 'function' ? logging : errorLog(logging);
  const db = await openDatabase(config);
  let redis: Redis | undefined;
  try {
    await db.withConnection((sql) => migrate(sql));
    redis = config.redisUrl ? await connectRedis(config.redisUrl, config.timeouts) : undefined;
  } catch (error) {
    await db.close();
    throw error;
  }
  const metrics = await createMetrics({ db, redis }, config.metricsPort !== undefined);
  const memory = redis ? undefined : memoryAdapters();
  const keys = loadKeys(config);
  // The audit trail (issue 11): rows in audit_events and `audit` lines, written where each change is made.
  const audit = createAuditLog({ prisma: db.prisma, sql: db.sql, logger });
  const users = createUserStore(db.prisma);
  const clients = createClientStore(db.prisma, audit);
  const views = createViews();
  // Store failures become 503s; a hung store is not waited on twice (store/store-failure.ts).
  // Redis has one breaker: its sessions, interactions and counters alike.
  const guards = { durable: storeGuard('database'), shortLived: storeGuard('redis', HUNG_PAUSE_MS, config.timeouts.redisCommandMs) };
  // Spec "Limits": counters in Redis (shared by every instance) or in this process; window 60 s.
  const limiter = metrics.countRefusals(createLimiterFactory(redis && { redis, keyPrefix: `${config.redisKeyPrefix}rl:`, guard: guards.shortLived }));
  const limits = {
    tokenPaths: new Set(TOKEN_ISSUING_PATHS),
    // Address budgets are only ever consumed: a refused address is refused here until its window ends.
    tokenByAddress: limiter('token-address', config.tokenRateLimitPerMinute, 60, { holdRefusals: true }),
    otherByAddress: limiter('address', config.rateLimitPerMinute, 60, { holdRefusals: true }),
  };
  const tokenByClient = limiter('token-client', config.tokenRateLimitPerMinute, 60);
  const guard = metrics.countLogins(createLoginGuard(limiter));
  const respondError = createErrorResponder(views, new Set([ROUTES.token, ROUTES.userinfo, ROUTES.revocation, ROUTES.introspection, WEBHOOKS_PATH]));
  const clock = () => new Date();
  // What a request's events write (outbox messages, audit rows) joins its one write statement.
  const joinRequestWrites = (key: string, write: Write) => {
    const batch = pendingWrites(db.sql);
    batch?.write(key, write);
    return batch !== undefined;
  };
  // Request-path reads, memoised per request (store/hot-reads.ts, README "Storage").
  const hot = createHotReads(db.sql);
  const findUser = (id: string) => hot.findUser(id);
  const usernameOf = async (accountId: string) => (await findUser(accountId))?.username;
  const webhooks = createWebhookService({
    prisma: db.prisma,
    clock,
    policy: { httpsOnly: config.production, allowPrivate: config.webhookAllowPrivateNetworks },
    retryBaseMs: config.webhookRetryBaseMs,
    attemptTimeoutMs: config.timeouts.webhookAttemptMs,
    leaseMs: config.webhookLeaseMs,
    usernameOf,
    clientHasWebhooks,
    joinRequestWrites,
    log: (error) => log(error),
    onOutcome: metrics.webhookOutcome,
    audit,
  });
  // A change, its webhook events and its audit rows: one transaction.
  const changes = auditedChanges(webhooks, audit);
  const clientSettings = createClientSettings(changes);
  const resources = createResourceStore({ prisma: db.prisma, configured: config.standardClients.resources, audit });

  const provider = createProvider({
    config,
    keys,
    adapters: createAdapterFactory({
      durable: postgresAdapters(db, hot),
      shortLived: redis ? redisAdapters(redis, config.redisKeyPrefix) : memory!.adapters,
      client: clientAdapter(hot.findClient),
      guards,
    }),
    findAccount: createFindAccount(findUser, guards.durable),
    renderError: async (ctx, out, thrown) => {
      const error = specErrorCode(String(out.error));
      // A metadata document that could not be fetched: say why (clients/metadata-document.ts).
      const reason = metadataFetchReason(thrown);
      const description = `${String(out.error_description ?? '')}${reason ? `: ${reason}` : ''}`;
      respondError(ctx, { error, error_description: description }, specStatus(error, ctx.status >= 400 ? ctx.status : 400));
    },
    verifyClientSecret,
    findResource: resources.find,
    fetch: guardedFetch({ ...config.standardClients.metadataDocuments, allowPrivate: config.standardClients.metadataDocuments.allowPrivateNetworks }) as never,
  });
  provider.on('server_error', (ctx, error) => log(error, ctx));
  provider.on('grant.success', (ctx) => metrics.tokenIssued(String(ctx.oidc.params?.grant_type)));
  const tokenEvents = providerEvents({ provider, raise: webhooks.raise, log: (error, ctx) => log(error, ctx) });
  const tokenAudit = providerAudit({ provider, audit, joinRequestWrites, log: (error, ctx) => log(error, ctx) });
  const usage = clientUsage({ provider, findClient: hot.findClient, joinRequestWrites, log: (error, ctx) => log(error, ctx) });
  const cleanup = startCleanup(db.prisma, {
    auditRetentionDays: config.auditRetentionDays,
    log: (error) => log(error),
    // Self-registered clients that obtained no token for DYNAMIC_CLIENT_IDLE_DAYS (clients/client-usage.ts records uses).
    sweeps: [(limit) => deleteIdleClients(db.prisma, audit, { days: config.standardClients.dynamicClientIdleDays, limit })],
  });

  const body = parseBody(); // forms and JSON of our own pages and APIs, at most 16 kB

  const inFlight = trackInFlight();
  // The fixed paths (README "Endpoints") and the methods each answers; any other method there is
  // 405, a plain OPTIONS 204 (http/exact-paths.ts).
  const served: Record<string, readonly string[]> = {
    [ROUTES.authorization]: ['GET'],
    [ROUTES.token]: ['POST'],
    [ROUTES.userinfo]: ['GET', 'POST'],
    [ROUTES.jwks]: ['GET'],
    [ROUTES.revocation]: ['POST'],
    [ROUTES.introspection]: ['POST'],
    ...Object.fromEntries(DISCOVERY_PATHS.map((path) => [path, ['GET']])),
    [REGISTER_PATH]: ['GET', 'POST'],
    [SETTINGS_PATH]: ['GET', 'POST'],
    [WEBHOOKS_PATH]: ['GET', 'POST', 'DELETE'],
    [APPLICATIONS_PATH]: ['GET', 'POST'],
    [OPENAPI_PATH]: ['GET'],
  };
  const servedPaths = Object.keys(served);

  // Behind TRUST_PROXY, the client is the last X-Forwarded-For entry (the one our proxy added).
  const koa = new Koa({ proxy: config.trustProxy, maxIpsCount: 1, keys: keys.cookieKeys });
  koa.silent = true; // errors are logged by handleErrors and the provider's server_error event
  koa
    .use(inFlight.middleware) // a drained shutdown waits for every handler, hung-up clients' included
    .use(requestId())
    .use(accessLog({ logger, onResponse: metrics.observeRequest, knownPaths: new Set([...servedPaths, HEALTH_PATH, LIVE_PATH, READY_PATH, '/assets/site.css']) }))
    .use(handleErrors(respondError, log))
    .use(securityHeaders({ hsts: config.secureCookies, tokenPaths: limits.tokenPaths }))
    .use(health({
      // Through the guards: ready exactly when requests would be let through to the stores.
      checks: { database: () => guards.durable(() => db.ping()), ...(redis ? { redis: () => guards.shortLived(() => redis!.ping()) } : {}) },
      stopping: () => inFlight.draining,
    }))
    .use(staticAssets(VIEWS_DIR))
    .use(rateLimit(limits)) // everything below is limited; nothing is parsed or looked up before it
    .use(exactPaths(served))
    // Each request's reads and its one write statement (store/request-memo.ts), for every route:
    // what a page or the provider reads twice is read once, and what a request's events write
    // (outbox messages, audit rows) joins that statement, sent before the response leaves.
    .use(requestMemo(guards.durable, tokenLookAhead))
    .use(openapiDocument()) // issue 11: the API's description, from openapi.json
    .use(registerRoutes({ clients, views, body, dynamic: dynamicRegistration({
      clients,
      initialAccessToken: config.standardClients.registrationInitialAccessToken,
      check: checkRegisteredMetadata(provider),
    }) }).routes())
    .use(settingsRoutes({ findClient: clients.find, settings: clientSettings, webhooks, views, body, clock }).routes())
    .use(webhooksApi({ findClient: clients.find, webhooks, body }).routes())
    .use(interactionRoutes({
      provider, users, findUser, guard, audit, views, body,
      onDenied: (d) => webhooks.raise('authorization.denied', { client_id: d.clientId, client_name: d.clientName, account_id: d.accountId }),
      consent: consentView({
        originOf: async (clientId) => (isMetadataDocumentClientId(clientId) ? 'metadata-document' : (await hot.findClient(clientId))?.registration as ClientOrigin | undefined),
        findResource: resources.find,
      }),
    }).routes())
    .use(applicationsRoutes({
      apps: createAuthorizedApps({ prisma: db.prisma, withEvents: revocationAnnouncer(changes) }),
      findUser,
      signIn: { guard, users, audit },
      loginSessions: loginSessions(provider),
      views,
      body,
    }).routes())
    .use(specGlue({
      answerUntrusted: respondError,
      admitClient: tokenAdmission(tokenByClient),
      usernameOf,
      resourceScope: async (indicator) => (await resources.find(indicator))?.scopes.join(' '),
      // A metadata document's client is public (clients/metadata-document.ts); ours have no secret.
      introspectJwt: jwtIntrospection({ issuer: config.baseUrl, signingKeys: () => keys.jwks.keys, findGrant: (grantId) => provider.Grant.find(grantId) }),
      isPublicClient: async (clientId) => isMetadataDocumentClientId(clientId) || (isWellFormedClientId(clientId) && (await hot.findClient(clientId))?.clientSecretHash === null),
    }))
    .use(sendWrites(guards.durable)) // the provider's writes, with its events', before the glue sees the answer
    .use(tokenEvents.settle)
    .use(tokenAudit.settle)
    .use(usage.settle)
    .use(mount(provider));
  webhooks.start();

  let metricsServer: MetricsServer | undefined;
  const app: App = {
    koa,
    provider,
    db,
    redis,
    users,
    clients,
    webhooks,
    logger,
    metrics,
    get metricsPort() { return metricsServer?.port; },
    callback: () => koa.callback(),
    startDraining: () => inFlight.startDraining(),
    settled: (timeoutMs) => inFlight.settled(timeoutMs),
    async close({ timeoutMs = config.timeouts.shutdownMs } = {}) {
      inFlight.startDraining();
      const settled = await inFlight.settled(timeoutMs);
      await metricsServer?.close();
      await Promise.all([cleanup.stop(), webhooks.stop()]); // stop() aborts attempts in flight and releases their claims
      memory?.close();
      redis?.disconnect();
      await db.close();
      return settled;
    },
  };
  if (config.metricsPort !== undefined) {
    try {
      metricsServer = await startMetricsServer(metrics.registry!, config.metricsPort);
    } catch (error) {
      await app.close({ timeoutMs: 0 });
      throw error;
    }
  }
  return app;
}
