/**
 * Structured logs (issue 11 "Operable in production"): one JSON object a line on stdout, at
 * LOG_LEVEL and above; readable lines (pino-pretty) only for a person at a terminal outside
 * production. Created once by the process (src/main.ts) and passed down; never a module singleton.
 *
 * Secrets never reach a line: the access log carries the route, not the URL with its query, and
 * no headers; whatever else is logged goes through {@link REDACTED_PATHS}.
 *
 * @example const logger = createLogger({ level: config.logLevel, pretty: process.stdout.isTTY && !config.production });
 */
import { createRequire } from 'node:module';
import { pino } from 'pino';
import type { DestinationStream, Logger } from 'pino';
import type pinoPretty from 'pino-pretty';
import type { Context } from 'koa';

export type { Logger } from 'pino';

/** LOG_LEVEL values, most severe first (`silent` logs nothing). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Field names that hold credentials anywhere they might appear (an error's properties, a
 * request body someone logs at debug): passwords, client secrets, codes, tokens, cookies and
 * Authorization headers. pino replaces their values with "[Redacted]".
 */
export const SECRET_FIELDS: readonly string[] = [
  'password', 'client_secret', 'clientSecret', 'code', 'code_verifier', 'access_token', 'refresh_token',
  'id_token', 'token', 'authorization', 'cookie', 'set-cookie', 'secret', 'signing_secret',
];
export const REDACTED_PATHS: readonly string[] = [
  ...SECRET_FIELDS.flatMap((field) => [`["${field}"]`, `*["${field}"]`]),
  ...['headers', 'req.headers', 'res.headers', 'err.headers'].flatMap((at) => [`${at}.authorization`, `${at}.cookie`, `${at}["set-cookie"]`]),
];

export interface LoggerOptions {
  level: LogLevel;
  /** Readable multi-colour lines instead of JSON (a terminal outside production). */
  pretty?: boolean;
  /** Where lines go; stdout unless given (tests capture them). */
  destination?: DestinationStream;
  /** Write to stderr instead (a process that could not start says why there). */
  stderr?: boolean;
}

export function createLogger({ level, pretty: readable = false, destination, stderr = false }: LoggerOptions): Logger {
  const options = {
    level,
    base: undefined, // no pid/hostname on every line: the platform adds where a line came from
    redact: { paths: [...REDACTED_PATHS], censor: '[Redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const fd = stderr ? 2 : 1;
  if (readable) {
    // Loaded only for a person at a terminal: a service never needs it.
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof pinoPretty;
    return pino(options, pretty({ colorize: true, sync: true, destination: destination ?? fd }));
  }
  if (destination || stderr) return pino(options, destination ?? pino.destination({ dest: fd, sync: true }));
  return pino(options, bufferedStdout());
}

/**
 * stdout, written in chunks: lines gather until 8 kB or for at most {@link FLUSH_MS}, then go out
 * in one write from this thread. A line a request costs no write of its own, and no trip
 * through libuv's thread pool (an async write per line cost a `write` and two thread wake-ups
 * a request, more than the line itself: README "Performance"). What is gathered is written when
 * the process exits, however it exits, but for SIGKILL (up to {@link FLUSH_MS} of lines lost).
 */
function bufferedStdout() {
  const out = pino.destination({ dest: 1, sync: true, minLength: 8192, periodicFlush: FLUSH_MS });
  process.once('exit', () => { out.flushSync(); });
  return out;
}

/** The longest a log line waits on stdout. */
export const FLUSH_MS = 200;

/** The app's error callback as log lines: one `error` line, with the request's id and route when a request failed. */
export function errorLog(logger: Logger): (error: unknown, ctx?: Context) => void {
  return (error, ctx) => {
    if (!ctx) {
      logger.error({ err: error }, 'error');
      return;
    }
    // The request's access line, with the same request_id, names its route and status.
    logger.error({ err: error, request_id: (ctx.state as { requestId?: string }).requestId, method: ctx.method }, 'request failed');
  };
}
