/**
 * Structured logs: one JSON object a line on stdout, at
 * LOG_LEVEL and above; readable lines (pino-pretty) only for a person at a terminal outside
 * production. Created once by the process (src/main.ts) and passed down; never a module singleton.
 *
 * Secrets never reach a line: the access log carries the route, not the URL with its query, and
 * no headers; whatever else is logged goes through {@link REDACTED_PATHS}.
 *
 * @example const logger = createLogger({ level: config.logLevel, pretty: readableOutput(process.stdout, config.production) });
 */
import { createRequire } from 'node:module';
import { pino } from 'pino';
import type { DestinationStream, Logger } from 'pino';
import type pinoPretty from 'pino-pretty';
import type { Context } from 'koa';
import { LOG_LEVELS } from '../config.js';
import type { LogLevel } from '../config.js';

export type { Logger } from 'pino';

/** LOG_LEVEL values (config.ts), most severe first (`silent` logs nothing). */
export { LOG_LEVELS };
export type { LogLevel };

/**
 * Field names that hold credentials anywhere they might appear (an error's properties, a
 * request body someone logs at debug): passwords, client secrets, codes, tokens, cookies and
 * Authorization headers. pino replaces their values with "[Redacted]", at the top of a line and
 * one level down (`detail.password`), as do the header paths below (`err.headers.cookie`); an
 * error's own `code` is the one exception ({@link censor}).
 */
export const SECRET_FIELDS: readonly string[] = [
  'password', 'client_secret', 'clientSecret', 'code', 'code_verifier', 'access_token', 'refresh_token',
  'id_token', 'token', 'authorization', 'cookie', 'set-cookie', 'secret', 'signing_secret',
];
export const REDACTED_PATHS: readonly string[] = [
  ...SECRET_FIELDS.flatMap((field) => [`["${field}"]`, `*["${field}"]`]),
  ...['headers', 'req.headers', 'res.headers', 'err.headers'].flatMap((at) => [`${at}.authorization`, `${at}.cookie`, `${at}["set-cookie"]`]),
  // Named as well as matched by `*`, so that the censor is told whose code it is (below).
  'err.code', 'warning.code',
];

/** The fields whose `code` names what failed, not a credential: a logged error, a process warning. */
const FAILURE_FIELDS = new Set<unknown>(['err', 'warning']);
/** An error code: ECONNREFUSED, ERR_JWT_EXPIRED, DEP0005 (Node), 57014 (a SQLSTATE), P2002 (Prisma). */
const ERROR_CODE = /^[A-Z0-9_]{1,32}$/;

/**
 * `code` is two things in a line: an authorization code (RFC 6749 §4.1.2), a credential, and an
 * error's code, the first thing an operator searches a failure by. So an error's or a warning's
 * own `code` (`err.code`, `warning.code`) is kept when it has an error code's shape (upper-case
 * letters, digits and `_`, at most 32 of them, or a number). An authorization code is 43 base64url
 * characters, longer than that shape allows, so one that ended up there is still redacted.
 * Every other secret field, and `code` anywhere else, is "[Redacted]".
 */
function censor(value: unknown, path: readonly unknown[]): unknown {
  const [owner, field, ...deeper] = path;
  const errorCode = typeof value === 'number' || (typeof value === 'string' && ERROR_CODE.test(value));
  return FAILURE_FIELDS.has(owner) && field === 'code' && deeper.length === 0 && errorCode ? value : '[Redacted]';
}

/**
 * Whether lines are printed readably (pino-pretty) rather than as JSON: only for a person, i.e.
 * when the stream is a terminal, and never in production, where a terminal is still a log shipper's
 * to read.
 *
 * @example createLogger({ level: config.logLevel, pretty: readableOutput(process.stdout, config.production) });
 */
export function readableOutput(stream: { isTTY?: boolean }, production: boolean): boolean {
  return stream.isTTY === true && !production;
}

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
    redact: { paths: [...REDACTED_PATHS], censor },
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
 * a request, more than the line itself). What is gathered is written when
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
    logger.error({ err: error, request_id: ctx.state.requestId, method: ctx.method }, 'request failed');
  };
}
