/**
 * Starts the service: config → app → listen; on SIGINT/SIGTERM, a drained shutdown:
 *
 * | step | what                                                                                   |
 * |------|----------------------------------------------------------------------------------------|
 * | 1    | readiness answers 503 `stopping`; responses carry `Connection: close`                  |
 * | 2    | for SHUTDOWN_DELAY_MS the instance still serves, so load balancers take it out first    |
 * | 3    | the listener stops accepting; idle keep-alive connections close                          |
 * | 4    | requests in flight finish (hung-up clients' too), at most SHUTDOWN_TIMEOUT_MS           |
 * | 5    | the webhook worker and the cleanup job stop; then the pools close                        |
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { serverOptions } from './http/server-timeouts.js';
import type { Config } from './config.js';
import { createLogger } from './ops/logger.js';
import type { Logger } from './ops/logger.js';
import { routeProcessOutput } from './ops/process-output.js';

/** Readable lines only for a person at a terminal, never in production (issue 11). */
const readable = (config?: Config) => Boolean(process.stdout.isTTY) && !config?.production;
/** Why the process could not start, on stderr: a message, not a stack trace. */
const startFailure = (message: string, fields: object = {}) => {
  createLogger({ level: 'info', pretty: Boolean(process.stderr.isTTY), stderr: true }).fatal(fields, message);
};

function describe(config: Config): string {
  const database = config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `embedded PostgreSQL in ${config.dataDir}`;
  const sessions = config.redisUrl ? 'Redis (REDIS_URL)' : 'process memory';
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
    logger = createLogger({ level: config.logLevel, pretty: readable(config) });
    tls = config.tls && readTls(config.tls);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    startFailure(`Configuration error: ${error.message}`, { variable: error.variable });
    process.exit(1);
  }
  routeProcessOutput(logger);
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
  startFailure(`Could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
