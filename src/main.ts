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

async function main() {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`Configuration error: ${error.message}`);
    process.exit(1);
  }
  const app = await createApp(config);
  const server = config.tls
    ? https.createServer({ cert: fs.readFileSync(config.tls.certFile), key: fs.readFileSync(config.tls.keyFile) }, app.callback())
    : http.createServer(app.callback());
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
