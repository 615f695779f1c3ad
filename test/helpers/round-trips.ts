/**
 * Counts the store round trips one HTTP request costs:
 * - PostgreSQL: every query a node-postgres client sends (`pg.Client#query`; a pooled query is
 *   one too). BEGIN and COMMIT of a transaction are round trips of their own and count.
 * - Redis: every write on a socket to Redis. ioredis writes a single command in one write and a
 *   whole pipeline (or MULTI … EXEC) in one write, so a pipeline counts once, as it costs.
 *
 * Only work done on behalf of a request of the given server counts: its request listener runs
 * inside an AsyncLocalStorage scope, so the webhook worker, the cleanup job and the test's own
 * clients are not counted.
 *
 * @example const trips = countRoundTrips(t.server, [6379]); const { postgres, redis } = await trips.during(() => userinfo(t, bearer));
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type http from 'node:http';
import net from 'node:net';
import pg from 'pg';

export interface RoundTrips {
  postgres: number;
  redis: number;
  /** The Redis commands and SQL sent, for a failure message. */
  log: string[];
}

const scope = new AsyncLocalStorage<{ counts: RoundTrips; redisPorts: ReadonlySet<number> }>();
let patched = false;

function patchOnce() {
  if (patched) return;
  patched = true;
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    const active = scope.getStore();
    if (active) {
      active.counts.postgres += 1;
      const first = args[0] as string | { text?: string };
      active.counts.log.push(`pg: ${(typeof first === 'string' ? first : first?.text ?? '').slice(0, 160)}`);
    }
    return query.apply(this, args);
  } as never;
  const write = net.Socket.prototype.write as (...args: unknown[]) => boolean;
  net.Socket.prototype.write = function counted(this: net.Socket, ...args: unknown[]) {
    const active = scope.getStore();
    if (active && this.remotePort !== undefined && active.redisPorts.has(this.remotePort)) {
      active.counts.redis += 1;
      active.counts.log.push(`redis: ${String(args[0]).replace(/\r\n/g, ' ').slice(0, 160)}`);
    }
    return write.apply(this, args);
  } as never;
}

export interface RoundTripCounter {
  /** Runs `requests` (HTTP calls to the server) and returns what the server spent on them in all. */
  during(requests: () => Promise<unknown>): Promise<RoundTrips>;
}

/** Instruments `server` (started by startTestApp); `redisPorts` are the ports its Redis listens on. */
export function countRoundTrips(server: http.Server, redisPorts: number[] = [6379]): RoundTripCounter {
  patchOnce();
  const ports = new Set(redisPorts);
  let current: RoundTrips | undefined;
  const listeners = server.listeners('request') as http.RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const counts = current ?? { postgres: 0, redis: 0, log: [] };
    scope.run({ counts, redisPorts: ports }, () => {
      for (const listener of listeners) listener(req, res);
    });
  });
  return {
    async during(requests) {
      const counts: RoundTrips = { postgres: 0, redis: 0, log: [] };
      current = counts;
      try {
        await requests();
        // Work a handler finishes after its response was written still belongs to it.
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        current = undefined;
      }
      return counts;
    },
  };
}
