// Kept over @godaddy/terminus: its stoppable closes connections whose request is not yet read, and it waits for connections, not handlers, so a hung-up client's handler would outlive the pools.
/**
 * Starts the service: config → app → listen; on SIGINT/SIGTERM, a drained shutdown:
 *
 * | step | what                                                                                   |
 * |------|----------------------------------------------------------------------------------------|
 * | 1    | readiness answers 503 `stopping`; responses carry `Connection: close`                  |
 * | 2    | for SHUTDOWN_DELAY_MS the instance still serves, so load balancers take it out first    |
 * | 3    | the listener stops accepting; idle keep-alive connections close                          |
 * | 4    | requests in flight finish (hung-up clients' too), at most SHUTDOWN_TIMEOUT_MS           |
 * | 5    | the webhook worker and the cleanup job stop; then the pools close, ending any connection  |
 * |      | a request still running at the deadline holds (store/database.ts), and the process exits |
 */
import fs from 'node:fs';
import http from 'node:http';
import v8 from 'node:v8';
import https from 'node:https';
import net from 'node:net';
import { ConfigError, loadConfig } from './config.js';
import { serverOptions } from './http/server-timeouts.js';
import type { Config } from './config.js';
import { createLogger, readableOutput } from './ops/logger.js';
import type { Logger } from './ops/logger.js';
import { routeProcessOutput } from './ops/process-output.js';

/**
 * Heap growth: V8 lets the heap grow to 4× what survived the last full collection before it
 * collects again, sized for the machine's memory, not the service's, so under load the heap
 * climbs to several times the service's small live set. A factor of 1.5 keeps the resident set
 * near the live set at no throughput cost the bench can see (full collections are short), and,
 * unlike a heap cap, never fails a larger live set: the heap still grows with it. V8 reads the factor whenever it sets the next limit, so setting it here
 * takes effect from the first collection; `node --heap-growing-percent=N dist/launch.cjs` overrides it.
 */
if (!process.execArgv.some((arg) => arg.startsWith('--heap-growing-percent'))) v8.setFlagsFromString('--heap-growing-percent=50');

/**
 * Why the process could not start, on stderr: a message, not a stack trace. Readable at a
 * terminal: with no configuration read, whether this is production is not known.
 */
const startFailure = (message: string, fields: object = {}) => {
  createLogger({ level: 'info', pretty: readableOutput(process.stderr, false), stderr: true }).fatal(fields, message);
};

function describe(config: Config): string {
  const database = !config.databaseUrl ? `embedded PostgreSQL in ${config.dataDir}`
    : config.databasePooler ? 'PostgreSQL through pgbouncer (DATABASE_URL; sessions on DATABASE_DIRECT_URL)' : 'PostgreSQL (DATABASE_URL)';
  const sessions = config.redisUrl ? 'Redis (REDIS_URL)' : config.redisSentinel ? `Redis through Sentinel (primary "${config.redisSentinel.name}")` : 'process memory';
  return `OAuth service at ${config.baseUrl} (port ${config.port}); data: ${database}; sessions: ${sessions}`;
}

/** The certificate and key, read before anything starts; an unreadable file is a ConfigError naming its variable. */
function readTls(tls: NonNullable<Config['tls']>): { cert: Buffer; key: Buffer } {
  const read = (variable: string, file: string) => {
    try {
      return fs.readFileSync(file);
    } catch (error) {
      throw new ConfigError(variable, `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  return { cert: read('TLS_CERT_FILE', tls.certFile), key: read('TLS_KEY_FILE', tls.keyFile) };
}

async function main() {
  let config: Config;
  let logger: Logger;
  let tls: { cert: Buffer; key: Buffer } | undefined;
  try {
    config = loadConfig(process.env);
    logger = createLogger({ level: config.logLevel, pretty: readableOutput(process.stdout, config.production) });
    tls = config.tls && readTls(config.tls);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    startFailure(`Configuration error: ${error.message}`, { variable: error.variable });
    process.exit(1);
  }
  routeProcessOutput(logger);
  // Loaded only now: oidc-provider prints a notice as it loads ("Unsupported runtime" on Node 20),
  // which must reach the logger like its later warnings, not stderr as raw text.
  const { createApp } = await import('./app.js');
  const app = await createApp(config, logger);
  const bounds = serverOptions(config.timeouts); // slow or unfinished requests are closed (HTTP_*_TIMEOUT_MS)
  const server = tls ? https.createServer({ ...tls, ...bounds }, app.callback()) : http.createServer(bounds, app.callback());
  server.listen(config.port, () => logger.info(describe(config)));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const { shutdownDelayMs, shutdownMs } = config.timeouts;
    logger.info(`${signal}: draining (not ready; closing the listener in ${shutdownDelayMs} ms)`);
    app.startDraining();
    await new Promise((resolve) => setTimeout(resolve, shutdownDelayMs));
    // Stop accepting, but let open connections deliver the request they carry: http's own
    // close() would also drop connections whose request has not been read yet.
    const deadline = Date.now() + shutdownMs;
    const closed = new Promise((resolve) => net.Server.prototype.close.call(server, resolve));
    await app.settled(shutdownMs);
    server.closeIdleConnections(); // nothing is in flight on them: no request can start there any more
    const settled = await app.close({ timeoutMs: Math.max(deadline - Date.now(), 0) });
    if (!settled) logger.error(`${signal}: requests still running after SHUTDOWN_TIMEOUT_MS (${shutdownMs} ms); closed anyway`);
    server.closeAllConnections();
    await closed;
    logger.info(`${signal}: closed`);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  // A ConfigError here is a setting the stores disagree with (store/pooler.ts, store/redis-sentinel.ts).
  startFailure(`Could not start: ${error instanceof Error ? error.message : String(error)}`, error instanceof ConfigError ? { variable: error.variable } : {});
  process.exit(1);
});
