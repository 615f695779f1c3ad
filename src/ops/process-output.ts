/**
 * Routes what the process prints by other means through the logger, so that every line on
 * stdout is one JSON object. oidc-provider writes its notices and warnings with
 * `console.info` / `console.warn` (lib/helpers/attention.js: "oidc-provider WARNING: already
 * parsed request body detected…"), and Node prints `process.emitWarning` warnings to stderr
 * through a default 'warning' listener.
 *
 * Process-wide on purpose: only the process's entry point (src/main.ts) calls this, never the
 * app, so that tests running several apps in one process keep their console.
 *
 * @example routeProcessOutput(logger);
 */
import { format } from 'node:util';
import type { Logger } from 'pino';

const PROVIDER_PREFIX = /^oidc-provider (NOTICE|WARNING): /;

export function routeProcessOutput(logger: Logger): void {
  const line = (level: 'info' | 'warn' | 'error') => (...args: unknown[]) => {
    const text = format(...args);
    const provider = PROVIDER_PREFIX.exec(text);
    if (provider) logger[level]({ source: 'oidc-provider' }, text.slice(provider[0].length));
    else logger[level]({ source: 'console' }, text);
  };
  console.log = line('info');
  console.info = line('info');
  console.warn = line('warn');
  console.error = line('error');
  // Node's own printer is the only default 'warning' listener; replace it with a log line.
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    logger.warn({ source: 'node', warning: { name: warning.name, code: (warning as NodeJS.ErrnoException).code } }, warning.message);
  });
}
