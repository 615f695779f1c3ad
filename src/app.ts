/**
 * The composition root: the only module that knows every part. It opens the stores, builds
 * the provider and the pages, and declares the middleware order.
 *
 * @example const app = await createApp(loadConfig(process.env)); http.createServer(app.callback());
 */
import type http from 'node:http';
import Router from '@koa/router';
import Koa from 'koa';
import type { Context } from 'koa';
import compose from 'koa-compose';
import type Provider from 'oidc-provider';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { specErrorCode, specStatus } from './errors.js';
import { countingOutcomes, createLoginGuard } from './accounts/login-guard.js';
import { createUserStore } from './accounts/user-store.js';
import type { UserStore } from './accounts/user-store.js';
import { createAuditLog } from './audit/audit-log.js';
import { createRecords } from './audit/records.js';
import type { Records } from './audit/records.js';
import { createClientStore } from './clients/client-store.js';
import type { ClientStore } from './clients/client-store.js';
import { createClientSettings } from './clients/client-settings.js';
import { createSecretCheck, isWellFormedClientId } from './clients/credentials.js';
import { dynamicRegistration } from './ui/dynamic-registration.js';
import { registrationLock } from './clients/registration-lock.js';
import { deleteIdleClients } from './clients/idle-clients.js';
import { isMetadataDocumentClientId, metadataFetchDetail, metadataFetchReason } from './clients/metadata-document.js';
import { createKeySets } from './clients/key-sets.js';
import { describedBy } from './clients/client-metadata.js';
import { guardedFetch } from './outbound/guarded-fetch.js';
import { outboundPolicies } from './outbound/policies.js';
import { urlProblem } from './outbound/ssrf-guard.js';
import { checkedResources } from './resources/resource-declaration.js';
import { createResourceStore } from './resources/resource-store.js';
import { openAnsweringDatabase } from './store/database.js';
import type { Database } from './store/database.js';
import { startCleanup } from './store/cleanup.js';
import { STARTUP_RETRY_MS, startupWait } from './store/startup-wait.js';
import { HUNG_PAUSE_MS, storeGuard } from './store/store-failure.js';
import { createHotReads } from './store/hot-reads.js';
import { requestState } from './store/request-state.js';
import { createWriteSender } from './store/write-sender.js';
import { countingRefusals, createLimiterFactory } from './store/limiter.js';
import { migrate } from './store/migrate.js';
import { connectRedis, redisState, redisTarget } from './store/redis.js';
import { loadCookieKeys } from './store/cookie-keys.js';
import { createAdapterFactory, postgresAdapters } from './oidc/adapter.js';
import { createAuthorizedApps } from './oidc/authorized-apps.js';
import { clientKeys, keySetFetch } from './oidc/client-keys.js';
import { logClientAuthRefusals } from './oidc/client-auth-refusals.js';
import { createFindAccount } from './accounts/provider-account.js';
import { revocationAnnouncer } from './oidc/grant-revocations.js';
import { loginSessions } from './oidc/login-session.js';
import { endSessionGlue, logoutErrors, logoutPostAsGet } from './oidc/end-session-glue.js';
import { logoutTokens } from './oidc/logout-token.js';
import { createSessionEnd } from './oidc/session-end.js';
import { memoryAdapters } from './oidc/memory-adapter.js';
import { jwtIntrospection } from './oidc/jwt-introspection.js';
import { createProvider } from './oidc/provider.js';
import { checkRegisteredMetadata } from './oidc/registered-client.js';
import { recordProviderEvents } from './oidc/provider-events.js';
import type { ProviderDependencies } from './oidc/provider.js';
import { loadSigningKeys } from './oidc/key-rotation.js';
import type { SigningKeys } from './oidc/key-rotation.js';
import { redisAdapters } from './oidc/redis-adapter.js';
import { ROUTES } from './oidc/routes.js';
import { authorizeGlue, introspectGlue, resumeGlue, userinfoGlue } from './oidc/spec-glue.js';
import { discoveryGlue } from './oidc/discovery-glue.js';
import { tokenEndpoint } from './oidc/token-endpoint.js';
import { accessLog, publicOrigin, trackInFlight } from './http/access-log.js';
import { parseBody } from './http/body.js';
import { browserCors, handleErrors, requireScheme, securityHeaders } from './http/responses.js';
import { health } from './http/health.js';
import { openapiDocument } from './http/openapi-document.js';
import { createLogger, errorLog } from './ops/logger.js';
import { NO_METRICS } from './ops/metrics.js';
import type { Metrics } from './ops/metrics.js';
import { startMetricsServer } from './ops/metrics-server.js';
import type { MetricsServer } from './ops/metrics-server.js';
import type { Logger as OpsLogger } from './ops/logger.js';
import { exactPaths } from './http/exact-paths.js';
import { rateLimit, tokenBudgets } from './http/rate-limit.js';
import { ROUTE_FAMILIES, ROUTE_TABLE } from './http/route-table.js';
import type { FamilyName, HandlerName } from './http/route-table.js';
import { limited, openCors, pathsWhere, routerOf, servedMethods, tokenRoutes } from './http/route-lists.js';
import type { Handler } from './http/route-lists.js';
import { staticAssets } from './http/static-assets.js';
import { applicationsRoutes } from './ui/applications.js';
import { consentView } from './ui/consent-view.js';
import type { ClientOrigin } from './ui/consent-view.js';
import { createErrorResponder } from './ui/error-page.js';
import { interactionRoutes } from './ui/interactions.js';
import { registerRoutes } from './ui/register.js';
import { settingsRoutes } from './ui/settings.js';
import { createViews, VIEWS_DIR } from './ui/views.js';
import { logoutPages } from './ui/logout-pages.js';
import { createBackchannelLogouts } from './webhooks/backchannel-logouts.js';
import { createWebhookService } from './webhooks/webhook-service.js';
import type { WebhookService } from './webhooks/webhook-service.js';
import { createWebhookEndpoints } from './webhooks/webhook-endpoints.js';
import type { WebhookEndpoints } from './webhooks/webhook-endpoints.js';
import { webhooksApi } from './ui/webhooks-api.js';
import { accountLinkRoutes } from './ui/account-links.js';
import { createSelfService } from './ui/self-service.js';
import { createMailWorker, deleteOldMail } from './mail/mail-outbox.js';
import type { MailWorker } from './mail/mail-outbox.js';
import { logTransport, smtpTransport } from './mail/transport.js';

export interface App {
  readonly koa: Koa;
  readonly provider: Provider;
  readonly db: Database;
  readonly redis: Redis | undefined;
  readonly users: UserStore;
  readonly clients: ClientStore;
  readonly webhooks: WebhookService;
  /** Clients' webhook endpoints: added, rotated and removed with their audit rows (webhooks/webhook-endpoints.ts). */
  readonly webhookEndpoints: WebhookEndpoints;
  /** Where the app records what happened: audit rows, webhook events, counts (audit/records.ts). */
  readonly records: Records;
  /** Where the app writes its access and error lines. */
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

/** Mails a request may cause (docs/accounts.md "Limits"): reset requests by client address and by address typed, reset and verification mails by account, in an hour. */
const ACCOUNT_MAIL_BUDGET = { byClient: 10, byEmail: 5, perAccount: 3, windowSeconds: 3600 } as const;

/** Receives the errors the app meets, with the request's context when a request failed. */
export type Logger = (error: unknown, ctx?: Context) => void;

/**
 * `logging`: the process's logger (src/main.ts creates it), which gets access and error lines;
 * or only an error callback (some tests), and then no access lines are written.
 */
export async function createApp(config: Config, logging: OpsLogger | Logger = createLogger({ level: config.logLevel })): Promise<App> {
  const logger = typeof logging === 'function' ? createLogger({ level: 'silent' }) : logging;
  const log: Logger = typeof logging === 'function' ? logging : errorLog(logging);
  // RESOURCES held to what a resource server may be, before anything starts (a ConfigError naming it).
  checkedResources(config.standardClients.resources);
  // PostgreSQL and Redis may come up after the service (compose, Kubernetes): each is waited for
  // within STORES_STARTUP_TIMEOUT_MS, with a line a retry (store/startup-wait.ts).
  const wait = startupWait(config.timeouts.storesStartupMs, (store, reason, leftMs) => {
    logger.warn({ store }, `${store} not reachable yet (${reason}); retrying in ${STARTUP_RETRY_MS / 1000} s, for at most ${Math.ceil(leftMs / 1000)} s more (STORES_STARTUP_TIMEOUT_MS)`);
  });
  const db = await wait.until('database', () => openAnsweringDatabase(config));
  let redis: Redis | undefined;
  let signingKeys: SigningKeys;
  try {
    await db.withConnection((sql) => migrate(sql));
    // Signing keys from the database, rotated in stages (oidc/key-rotation.ts, docs/signing-keys.md).
    signingKeys = await loadSigningKeys({ prisma: db.prisma, config, logger });
    const redisAt = redisTarget(config);
    redis = redisAt ? await wait.until('redis', () => connectRedis(redisAt, config.timeouts)) : undefined;
  } catch (error) {
    await db.close();
    throw error;
  }
  // Counted only with METRICS_PORT: only then is prom-client loaded (ops/metrics.ts).
  const metrics: Metrics = config.metricsPort === undefined ? NO_METRICS : (await import('./ops/prometheus-metrics.js')).prometheusMetrics({
    // One indexed aggregate over the pending deliveries (index status, next_attempt_at), on scrape.
    pendingDeliveries: async () => {
      const row = await db.prisma.webhookDelivery.aggregate({ where: { status: 'pending' }, _count: { _all: true }, _min: { createdAt: true } });
      return { pending: row._count._all, oldest: row._min.createdAt };
    },
    poolState: db.poolState,
    redisConnected: redis && (() => redis.status === 'ready'),
  });
  const memory = redis ? undefined : memoryAdapters();
  const keys = loadCookieKeys(config);
  // Store failures become 503s; a hung store is not waited on twice (store/store-failure.ts).
  // Redis has one breaker: its sessions, interactions and counters alike.
  const guards = { durable: storeGuard('database'), shortLived: storeGuard('redis', HUNG_PAUSE_MS, config.timeouts.redisCommandMs) };
  // The request path's reads and writes (docs/storage.md): each request's reads remembered for it,
  // its writes sent as one statement; those of one event-loop turn shared where that pays.
  const byTurn = config.databaseBatching === 'turn';
  const send = createWriteSender(db.sql, { byTurn, retried: metrics.writeRetried });
  const hot = createHotReads(db.sql, { byTurn });
  // The audit trail: rows in audit_events and `audit` lines, written where each change is made.
  const audit = createAuditLog({ logger });
  const users = createUserStore(db.prisma);
  const views = createViews();
  // Spec "Limits": counters in Redis (shared by every instance) or in this process; window 60 s.
  const limiter = countingRefusals(createLimiterFactory(redis && { redis, keyPrefix: `${config.redisKeyPrefix}rl:`, guard: guards.shortLived }), metrics.refused);
  // Address budgets are only ever consumed: a refused address is refused here until its window ends.
  const tokenByAddress = limiter('token-address', config.tokenRateLimitPerMinute, 60, { holdRefusals: true });
  const otherByAddress = limiter('address', config.rateLimitPerMinute, 60, { holdRefusals: true });
  const tokenByClient = limiter('token-client', config.tokenRateLimitPerMinute, 60);
  const guard = countingOutcomes(createLoginGuard(limiter), metrics.loginAttempted);
  const respondError = createErrorResponder(views, new Set(pathsWhere(ROUTE_TABLE, (route) => route.errors === 'json')));
  const clock = () => new Date();
  // One client secret check for the provider, the settings page and the webhooks API (the previous secret in its grace too).
  const checkSecret = createSecretCheck({ logger, counted: metrics.previousSecretUsed });
  const usernameOf = async (accountId: string) => (await hot.findUser(accountId))?.username;
  // Where our own requests may go, each use with its own bounded lookups (outbound/); a name
  // refused for what it resolved to is logged with the address, which no answer names.
  const outbound = outboundPolicies(config, { onRefused: (refusal) => logger.warn(refusal, 'outbound destination refused') });
  // A backchannel_logout_uri is where our requests go, as a webhook URL is: the same guard.
  const backchannelDestination = (uri: string) => urlProblem(uri, outbound.webhooks);
  // How the webhooks' worker delivers, and the back-channel logouts' with it: one guard, schedule and lease.
  const delivery = {
    clock,
    policy: outbound.webhooks,
    retryBaseMs: config.webhookRetryBaseMs,
    attemptTimeoutMs: config.timeouts.webhookAttemptMs,
    leaseMs: config.webhookLeaseMs,
    log: (error: unknown) => log(error),
    onOutcome: metrics.webhookOutcome,
  };
  const webhooks = createWebhookService({ prisma: db.prisma, ...delivery });
  // What happened, with the change it describes: in the request's writes, or a change's transaction.
  const records = createRecords({ transaction: (run, options) => db.prisma.$transaction(run, options), audit, webhooks, metrics, send });
  const changes = records.change;
  // Clients' webhook endpoints, made after the records their changes are recorded with.
  const webhookEndpoints = createWebhookEndpoints({ prisma: db.prisma, changes, policy: outbound.webhooks, clock, secretRotationGraceMs: config.secretRotationGraceMs });
  const clients = createClientStore(db.prisma, changes, { backchannelDestination });
  // Back-channel logout tokens: their own outbox, the webhooks' worker, schedule and guard.
  const logouts = createBackchannelLogouts({
    prisma: db.prisma,
    ...delivery,
    logoutToken: logoutTokens({ issuer: config.baseUrl, key: () => signingKeys.signingKey() }),
  });
  // Where every login session ends (oidc/session-end.ts, docs/sessions-and-logout.md).
  const sessions = createSessionEnd({ changes, logouts });
  const clientSettings = createClientSettings(changes, { graceMs: config.secretRotationGraceMs, clock, rules: { backchannelDestination } });
  // Declared resource servers (RFC 8707): RESOURCES and resources:add (docs/mcp.md).
  const resources = createResourceStore({ prisma: db.prisma, configured: config.standardClients.resources, changes });
  const documents = config.standardClients.metadataDocuments;
  // Clients' key sets (jwks_uri) for private_key_jwt, kept in memory (clients/key-sets.ts, oidc/client-keys.ts).
  const keySets = createKeySets({
    fetch: guardedFetch({ policy: outbound.keySets, timeoutMs: documents.timeoutMs, maxBytes: config.standardClients.keySets.maxBytes }),
    cacheMinSeconds: documents.cacheMinSeconds,
    cacheMaxSeconds: documents.cacheMaxSeconds,
    refetchSeconds: config.standardClients.keySets.refetchSeconds,
    onFailure: (uri, error) => logger.warn({ jwks_uri: uri, reason: error.reason, detail: error.detail }, 'client key set fetch failed'),
  });
  const keysOfClients = clientKeys(keySets);

  const providerOptions: ProviderDependencies = {
    config,
    keys,
    jwks: signingKeys.jwks,
    adapters: createAdapterFactory({
      durable: postgresAdapters(db, hot, send),
      shortLived: redis ? redisAdapters(redis, config.redisKeyPrefix) : memory!.adapters,
      findClient: hot.findClient,
      guards,
      clientKeys: keysOfClients,
    }),
    findAccount: createFindAccount(hot.findUser, guards.durable),
    renderError: async (ctx, out, thrown) => {
      const error = specErrorCode(String(out.error));
      // A metadata document that could not be fetched: say what kind of failure it was
      // (clients/metadata-document.ts); what the network said goes to the log alone.
      const reason = metadataFetchReason(thrown);
      const detail = metadataFetchDetail(thrown);
      if (detail) logger.warn({ request_id: ctx.state.requestId, client_id: ctx.oidc?.params?.client_id, detail }, 'metadata document fetch failed');
      const description = `${String(out.error_description ?? '')}${reason ? `: ${reason}` : ''}`;
      respondError(ctx, { error, error_description: description }, specStatus(error, ctx.status >= 400 ? ctx.status : 400));
    },
    checkClientSecret: checkSecret,
    findResource: resources.find,
    fetch: keySetFetch(keySets, guardedFetch({ policy: outbound.documents, timeoutMs: documents.timeoutMs, maxBytes: documents.maxBytes })) as never,
    clientKeys: keysOfClients,
    logoutPages: logoutPages(views),
  };
  const provider = createProvider(providerOptions);
  provider.on('server_error', (ctx, error) => log(error, ctx));
  logClientAuthRefusals(provider, logger);
  recordProviderEvents({ provider, records, log: (error, ctx) => log(error, ctx) });
  const cleanup = startCleanup(db.prisma, {
    auditRetentionDays: config.auditRetentionDays,
    log: (error) => log(error),
    // Self-registered clients that obtained no token for DYNAMIC_CLIENT_IDLE_DAYS (clients/client-usage.ts).
    sweeps: [
      (limit) => deleteIdleClients(changes, { days: config.standardClients.dynamicClientIdleDays, limit }),
      // Mails sent or given up, and links used or expired, a week on (mail/mail-outbox.ts).
      (limit) => deleteOldMail(db.prisma, limit),
    ],
  });
  // Mail (docs/accounts.md): an outbox and its worker; without SMTP_URL, the embedded default writes mails to the log.
  let mailWorker: MailWorker | undefined;
  if (config.mail.mode !== 'off') {
    if (config.mail.mode === 'log') logger.warn('SMTP_URL is unset: mails (password reset, address verification) are not sent, they are written to this log, links and all');
    mailWorker = createMailWorker({
      prisma: db.prisma,
      transport: config.mail.mode === 'smtp' ? smtpTransport(config.mail) : logTransport(logger, config.mail.from),
      mail: config.mail,
      baseUrl: config.baseUrl,
      clock,
      records,
      resetsByAccount: limiter('reset-account', ACCOUNT_MAIL_BUDGET.perAccount, ACCOUNT_MAIL_BUDGET.windowSeconds),
      log: (error) => log(error),
    });
  }
  const self = createSelfService({ prisma: db.prisma, users, changes, mail: config.mail, clock, queued: () => mailWorker?.wake(), sessions });
  // What a client authenticates with, for the token endpoint's required fields: a metadata
  // document's client is taken for public (its document is not fetched for this); ours say.
  const credentialOf = async (clientId: string) => {
    if (isMetadataDocumentClientId(clientId)) return 'none' as const;
    const client = isWellFormedClientId(clientId) ? await hot.findClient(clientId) : null;
    const method = client && describedBy(client)?.token_endpoint_auth_method;
    return method === 'none' ? 'none' as const : method === 'private_key_jwt' ? 'assertion' as const : 'secret' as const;
  };
  const resourceScope = async (indicator: string) => (await resources.find(indicator))?.scopes.join(' ');
  const introspectJwt = jwtIntrospection({
    issuer: config.baseUrl,
    publicKeys: signingKeys.publicKeys,
    findGrant: (grantId) => provider.Grant.find(grantId),
  });

  const body = parseBody(); // forms and JSON of our own pages and APIs, at most 16 kB

  const inFlight = trackInFlight();
  // mount(provider), with a provider rebuilt whenever the signing keys change (oidc/key-rotation.ts).
  const toProvider = signingKeys.serve(provider, (jwks) => createProvider({ ...providerOptions, jwks }), { changes, log: (error) => log(error) });
  const accountLinks = accountLinkRoutes({
    self, users, mailMode: config.mail.mode, views, body,
    resetsByClient: limiter('reset-client', ACCOUNT_MAIL_BUDGET.byClient, ACCOUNT_MAIL_BUDGET.windowSeconds),
    resetsByEmail: limiter('reset-email', ACCOUNT_MAIL_BUDGET.byEmail, ACCOUNT_MAIL_BUDGET.windowSeconds),
  });
  // The handlers of the route table's rows (http/route-table.ts says which path and method goes
  // to which): the provider's endpoints the spec reshapes have their glue in front of the
  // provider (oidc/token-endpoint.ts, oidc/spec-glue.ts); the provider serves the others as they are.
  const handlers: Record<HandlerName, Handler> = {
    authorize: compose([authorizeGlue(respondError, resourceScope), toProvider]),
    token: tokenEndpoint({ budgets: tokenBudgets({ byAddress: tokenByAddress, byClient: tokenByClient }), guard: guards.durable, provider: toProvider, credentialOf, resourceScope, log }),
    userinfo: compose([userinfoGlue, toProvider]),
    provider: toProvider,
    introspect: compose([introspectGlue(usernameOf, introspectJwt), toProvider]),
    logout: { GET: compose([logoutErrors, toProvider]), POST: logoutPostAsGet(body) },
    logoutConfirm: compose([endSessionGlue(sessions), toProvider]),
    logoutSuccess: compose([logoutErrors, toProvider]),
    discovery: compose([discoveryGlue(async () => (await guards.durable(() => resources.list())).flatMap((resource) => resource.scopes)), toProvider]),
    register: registerRoutes({
      clients, views, body,
      lock: registrationLock(config.standardClients.registrationInitialAccessToken),
      dynamic: dynamicRegistration({
        clients,
        check: checkRegisteredMetadata(provider),
        rules: { clientCredentials: config.standardClients.registrationClientCredentials, jwksUriDestination: (uri) => urlProblem(uri, outbound.keySets), backchannelDestination },
      }),
    }),
    settings: settingsRoutes({ findClient: clients.find, checkSecret, settings: clientSettings, endpoints: webhookEndpoints, webhooks, views, body, clock }),
    webhooks: webhooksApi({ findClient: clients.find, checkSecret, endpoints: webhookEndpoints, webhooks, body }),
    applications: applicationsRoutes({
      apps: createAuthorizedApps({ prisma: db.prisma, withEvents: revocationAnnouncer(changes) }),
      findUser: hot.findUser,
      signIn: { guard, users, records },
      loginSessions: loginSessions(provider, sessions),
      views,
      body,
      self,
      mailMode: config.mail.mode,
      verificationsByAccount: limiter('verify-account', ACCOUNT_MAIL_BUDGET.perAccount, ACCOUNT_MAIL_BUDGET.windowSeconds),
    }),
    ...accountLinks,
    openapi: openapiDocument(), // the API's description, from openapi.json
    health: health({
      // Through the guards: ready exactly when requests would be let through to the stores.
      checks: {
        database: { ping: () => guards.durable(() => db.ping()), state: db.poolerState },
        ...(redis ? { redis: { ping: () => guards.shortLived(() => redis!.ping()), state: redisState(redis, config.redisSentinel) } } : {}),
      },
      stopping: () => inFlight.draining,
    }),
    stylesheet: staticAssets(VIEWS_DIR),
  };
  // The families of paths under a prefix, each with its own router (http/route-table.ts ROUTE_FAMILIES).
  const families = {
    authorizeResume: new Router({ strict: true, sensitive: true }).all(new RegExp(`^${ROUTES.authorization.replace('.', '\\.')}/[^/]+$`), resumeGlue, toProvider).routes(),
    interaction: interactionRoutes({
      provider, users, findUser: hot.findUser, guard, records, views, body,
      consent: consentView({
        originOf: async (clientId) => (isMetadataDocumentClientId(clientId) ? 'metadata-document' : (await hot.findClient(clientId))?.registration as ClientOrigin | undefined),
        findResource: resources.find,
      }),
    }).routes(),
  } satisfies Record<FamilyName, unknown>;
  // Answered before the rate limits, and only at their exact paths and methods (routed, so that other requests pass neither).
  const unlimited = routerOf(ROUTE_TABLE.filter((route) => !limited(route)), handlers);
  // Every other row, after the limits: its exact path and methods only; other spellings and
  // other methods go on, to exactPaths' 404s and 405s.
  const limitedRoutes = ROUTE_TABLE.filter(limited);
  const routes = compose([routerOf(limitedRoutes, handlers).routes(), ...ROUTE_FAMILIES.map((family) => families[family.handler])]);
  // What is left at a provider's path (its other methods, its CORS preflights) goes to it; it is handed no other path.
  const providerPaths = new Set(pathsWhere(ROUTE_TABLE, (route) => route.provider === true));

  // X-Forwarded-Proto is read from proxies TRUST_PROXY trusts only; publicOrigin drops it from others and sets ctx.ip.
  const koa = new Koa({ proxy: config.trustProxy.kind !== 'none', keys: keys.cookieKeys });
  koa.silent = true; // errors are logged by handleErrors and the provider's server_error event
  koa
    // Every URL published comes from BASE_URL, whatever Host or X-Forwarded-Host say; the client's address by TRUST_PROXY.
    .use(publicOrigin(config))
    .use(inFlight.middleware) // a drained shutdown waits for every handler, hung-up clients' included
    .use(accessLog({ logger, onResponse: metrics.registry ? metrics.observeRequest : undefined, knownPaths: new Set(pathsWhere(ROUTE_TABLE, () => true)) }))
    // Browser apps: RFC 7591 registration from any origin, and our errors readable where the provider answers CORS.
    .use(browserCors({ open: openCors(ROUTE_TABLE), provider: pathsWhere(ROUTE_TABLE, (route) => route.cors === 'provider') }))
    .use(handleErrors(respondError, log))
    .use(securityHeaders({ hsts: config.secureCookies, tokenPaths: new Set(pathsWhere(ROUTE_TABLE, (route) => route.budget === 'token')) }))
    .use(unlimited.routes())
    .use(requireScheme(config.baseUrl)) // answered at BASE_URL's scheme only (400 otherwise)
    .use(rateLimit({ tokenRoutes: tokenRoutes(ROUTE_TABLE), tokenByAddress, otherByAddress })) // everything below is limited; nothing is parsed or looked up before it
    // Each request's reads, remembered for it, and its one write statement, sent before the
    // response leaves (store/request-state.ts).
    .use(requestState(guards.durable, send, log))
    .use(routes) // the table's rows (each with its public cache age), then the families
    // Another spelling of a known path is 404, a known path asked with another method 405, a plain OPTIONS 204.
    .use(exactPaths(servedMethods(limitedRoutes)))
    .use((ctx, next) => (providerPaths.has(ctx.path) ? toProvider(ctx, next) : next()));
  webhooks.start();
  logouts.start();
  mailWorker?.start();

  let metricsServer: MetricsServer | undefined;
  const app: App = {
    koa,
    provider,
    db,
    redis,
    users,
    clients,
    webhooks,
    webhookEndpoints,
    records,
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
      await Promise.all([cleanup.stop(), webhooks.stop(), logouts.stop(), signingKeys.stop(), mailWorker?.stop()]); // stop() aborts attempts in flight and releases their claims
      memory?.close();
      redis?.disconnect();
      await db.close();
      return settled;
    },
  };
  if (config.metricsPort !== undefined) {
    try {
      metricsServer = await startMetricsServer(metrics.registry!, { port: config.metricsPort, host: config.metricsHost });
    } catch (error) {
      await app.close({ timeoutMs: 0 });
      throw error;
    }
  }
  return app;
}
