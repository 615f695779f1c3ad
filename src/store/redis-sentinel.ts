/**
 * Redis found through Sentinel (REDIS_SENTINELS, REDIS_SENTINEL_NAME, REDIS_SENTINEL_PASSWORD;
 * docs/production-data-tier.md). ioredis asks the Sentinels for the primary, connects to it,
 * and asks again at each reconnection (redis.ts); this file talks to them itself:
 * - at start-up, so that a name no Sentinel monitors, a wrong password or no Sentinel at all
 *   stops start-up with the variable to fix (ioredis would retry for ever);
 * - for as long as the client lives, listening for `+switch-master`, so that a client still
 *   connected to a demoted primary that did not close its connections (hung, cut off) leaves it;
 * - when readiness fails, to say what Sentinel sees (a primary down, a failover in progress).
 *
 * @see https://redis.io/docs/latest/operate/oss_and_stack/management/sentinel/#sentinel-api
 */
import type { Redis } from 'ioredis';
import { ConfigError } from '../config.js';
import type { RedisSentinel } from '../config.js';
import { within } from './store-failure.js';

type Answer = { ok: true; reply: unknown } | { ok: false; error: Error };

/** `SENTINEL <args>` to every Sentinel at once, each on a connection of its own, each bounded at `timeoutMs`. */
async function askEach(sentinel: RedisSentinel, timeoutMs: number, args: string[]): Promise<Answer[]> {
  const { Redis } = await import('ioredis'); // loaded only with Redis configured, as in redis.ts
  return Promise.all(sentinel.sentinels.map(async ({ host, port }): Promise<Answer> => {
    const client = new Redis({
      host, port, password: sentinel.password, lazyConnect: true, enableReadyCheck: false, enableOfflineQueue: false,
      retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, commandTimeout: timeoutMs, disconnectTimeout: 100,
    });
    let refused: Error | undefined; // the socket's own error: the rejection only says "Connection is closed"
    client.on('error', (error: Error) => { refused ??= error; });
    try {
      // Bounded as a whole: a hung Sentinel accepts the connection and never answers.
      const reply = await within(timeoutMs, client.connect().then(() => client.call('SENTINEL', ...args)));
      return { ok: true, reply };
    } catch (error) {
      return { ok: false, error: refused ?? error as Error };
    } finally {
      client.disconnect();
    }
  }));
}

const listed = (sentinel: RedisSentinel) => sentinel.sentinels.map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`)).join(', ');

/** Start-up: at least one Sentinel knows the primary by REDIS_SENTINEL_NAME; otherwise an error naming what to fix. */
export async function checkSentinels(sentinel: RedisSentinel, timeoutMs: number): Promise<void> {
  const answers = await askEach(sentinel, timeoutMs, ['get-master-addr-by-name', sentinel.name]);
  if (answers.some((answer) => answer.ok && Array.isArray(answer.reply))) return;
  if (answers.some((answer) => answer.ok)) {
    throw new ConfigError('REDIS_SENTINEL_NAME', `no Sentinel of REDIS_SENTINELS (${listed(sentinel)}) monitors a primary named "${sentinel.name}"`);
  }
  const refused = answers.find((answer) => !answer.ok && /^(NOAUTH|WRONGPASS|ERR AUTH)/.test(answer.error.message));
  if (refused && !refused.ok) {
    throw new ConfigError('REDIS_SENTINEL_PASSWORD', `${sentinel.password === undefined ? 'is needed: the Sentinels ask for one' : 'the Sentinels refuse it'} (${refused.error.message})`);
  }
  const errors = answers.flatMap((answer) => (answer.ok ? [] : [answer.error]));
  const reasons = [...new Set(errors.map((error) => error.message))].join('; ');
  // The cause says what kind of failure it is: unreachable Sentinels are waited for at start-up (startup-wait.ts).
  throw new Error(`cannot reach any Sentinel of REDIS_SENTINELS (${listed(sentinel)}): ${reasons}`, { cause: errors[0] });
}

/**
 * Reconnects `client` (which then asks the Sentinels again) when a Sentinel announces that the
 * primary moved, unless it is already connected to the new one or already reconnecting. Redis
 * itself closes its clients when Sentinel demotes it; this covers a primary that cannot.
 * ioredis's own `failoverDetector` does the same, but disconnects even mid-reconnection, which
 * ends the client for good (its connector then rejects, and ioredis does not retry that).
 * The listeners end with the client.
 */
export async function followFailovers(sentinel: RedisSentinel, client: Redis, reconnectMs: number): Promise<void> {
  const { Redis } = await import('ioredis');
  const listeners = sentinel.sentinels.map(({ host, port }) => {
    const listener = new Redis({ host, port, password: sentinel.password, connectTimeout: reconnectMs, retryStrategy: (attempt) => Math.min(attempt * 200, reconnectMs) });
    listener.on('error', () => {});
    listener.on('message', (_channel: string, message: string) => {
      const [name, , , host, port] = message.split(' ');
      const stream = client.stream as { remoteAddress?: string; remotePort?: number } | undefined;
      if (name !== sentinel.name || client.status !== 'ready' || (stream?.remoteAddress === host && String(stream?.remotePort) === port)) return;
      client.disconnect(true);
    });
    listener.subscribe('+switch-master').catch(() => {});
    return listener;
  });
  client.once('end', () => { for (const listener of listeners) listener.disconnect(); });
}

/** `SENTINEL MASTER`'s flat list of fields and values, as an object. */
function fields(reply: unknown): Record<string, string> {
  const list = Array.isArray(reply) ? reply.map(String) : [];
  return Object.fromEntries(list.flatMap((value, i) => (i % 2 === 0 ? [[value, list[i + 1] ?? '']] : [])));
}

/**
 * What readiness says of a failing Redis behind Sentinel: how many Sentinels answer and what
 * they see of the primary (no addresses: readiness is public), and this instance's connection.
 */
export async function sentinelState(sentinel: RedisSentinel, client: Redis, timeoutMs: number): Promise<string> {
  const answers = await askEach(sentinel, timeoutMs, ['master', sentinel.name]);
  const views = answers.flatMap((answer) => (answer.ok ? [fields(answer.reply)] : []));
  const connection = `this instance's connection: ${client.status}`;
  if (views.length === 0) return `sentinel: none of ${answers.length} Sentinels answers; ${connection}`;
  const flags = new Set(views.flatMap((view) => (view.flags ?? '').split(',')));
  const primary = flags.has('o_down') || flags.has('s_down')
    ? `primary "${sentinel.name}" is down (${flags.has('o_down') ? 'agreed by a quorum' : 'seen by some'})`
    : `primary "${sentinel.name}" is up`;
  const failover = flags.has('failover_in_progress') || views.some((view) => view['failover-state'] && view['failover-state'] !== 'none')
    ? '; failover in progress' : '';
  return `sentinel: ${views.length} of ${answers.length} Sentinels answer; ${primary}${failover}; ${connection}`;
}
