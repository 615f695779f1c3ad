/**
 * Starts the service: config → app → listen; closes cleanly on SIGINT/SIGTERM.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import type { Config } from './config.js';

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
  let tls: { cert: Buffer; key: Buffer } | undefined;
  try {
    config = loadConfig(process.env);
    tls = config.tls && readTls(config.tls);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`Configuration error: ${error.message}`);
    process.exit(1);
  }
  const app = await createApp(config);
  const server = tls ? https.createServer(tls, app.callback()) : http.createServer(app.callback());
  server.listen(config.port, () => console.log(describe(config)));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: closing`);
    const force = setTimeout(() => server.closeAllConnections(), 10_000).unref();
    server.closeIdleConnections();
    await new Promise((resolve) => server.close(resolve));
    clearTimeout(force);
    await app.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(`Could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
