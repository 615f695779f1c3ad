/**
 * The drained shutdown's deadline (src/main.ts, docs/failure-behaviour.md "Drained shutdown" step 4): a request
 * still running SHUTDOWN_TIMEOUT_MS after the listener closed does not hold the process. At the
 * deadline the instance logs that requests were still running, closes its pools (not before),
 * and exits 0.
 *
 * The held request is a code exchange whose code row this test keeps locked (as
 * test/shutdown.test.ts does), with a statement timeout far past the deadline, until the
 * process has exited.
 */
import http from 'node:http';
import { describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { registerClient, userinfo } from './helpers/fixtures.js';
import { signalledService } from './helpers/signalled-service.js';
import type { TestApp } from './helpers/test-app.js';

const USER = { username: 'deadline', password: 'correct horse battery' };

/** Short, so the test is quick; the held statement may run a minute (DATABASE_STATEMENT_TIMEOUT_MS). */
const SHUTDOWN_DELAY_MS = 300;
const SHUTDOWN_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 60_000;
/** What closing the pools and the listener may add after the deadline, on a busy machine. */
const MARGIN_MS = 1000;
/** Pool samples are taken this often; a sample may lag the event it shows by as much. */
const SAMPLE_MS = 25;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('SIGTERM with a request that outlives SHUTDOWN_TIMEOUT_MS', () => {
  const service = signalledService(USER, {
    SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS), SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
  }, 1);

  test('exits 0 at SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS, says requests were still running, and closes its pools only then', async () => {
    const { database, instance, client, accessToken } = service;
    const code = service.codes[0]!;
    const holder = new pg.Client({ connectionString: database.url });
    const monitor = new pg.Client({ connectionString: database.url });
    await Promise.all([holder.connect(), monitor.connect()]);
    const ours = [(await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid, (await monitor.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid];
    /** The instance's idle pooled connections, as PostgreSQL sees them (the held one is active). */
    const idleOfInstance = async () => (await monitor.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND pid <> ALL($1)", [ours])).rows[0]!.n;

    try {
      // Pooled connections, left idle: they must stay open until the deadline.
      await Promise.all(Array.from({ length: 4 }, () => userinfo({ baseUrl: instance.baseUrl } as TestApp, `Bearer ${accessToken}`)));
      expect(await idleOfInstance()).toBeGreaterThan(0);

      // The held exchange: its consume waits on the row this test keeps locked.
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM oidc_models WHERE type = 'AuthorizationCode' AND id = $1 FOR UPDATE", [code]);
      const body = new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }).toString();
      const exchange = http.request(`${instance.baseUrl}/api/token.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } });
      exchange.on('error', () => undefined); // the closing instance ends its connection
      exchange.on('response', (res) => res.resume());
      exchange.end(body);
      for (let waited = 0; ; waited += 10) {
        const { rows } = await monitor.query('SELECT 1 FROM pg_locks WHERE NOT granted AND $1 = ANY (pg_blocking_pids(pid))', [ours[0]]);
        if (rows.length > 0) break;
        if (waited > 10_000) throw new Error('the exchange never reached its consume');
        await sleep(10);
      }

      // Several pooled connections, fresh (the pool closes one left idle for 10 s) and idle: they
      // must stay open until the deadline. Registrations, each a transaction of its own, open them;
      // more than one, so the webhook worker's poll borrowing one never leaves none idle.
      await Promise.all(Array.from({ length: 4 }, () => registerClient({ baseUrl: instance.baseUrl } as TestApp)));
      expect(await idleOfInstance()).toBeGreaterThanOrEqual(2);

      const signalledAt = Date.now();
      const deadline = signalledAt + SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS;
      instance.child.kill('SIGTERM');
      const samples: { at: number; idle: number }[] = [];
      let exitedAt: number | undefined;
      const exited = instance.exited.then((exitCode) => { exitedAt = Date.now(); return exitCode; });
      const giveUpAt = deadline + 10_000; // without the deadline the process would wait for the lock
      while (exitedAt === undefined && Date.now() < giveUpAt) {
        samples.push({ at: Date.now(), idle: await idleOfInstance() });
        await sleep(SAMPLE_MS);
      }
      if (exitedAt === undefined) await holder.query('ROLLBACK'); // let it go, then fail below
      const exitCode = await exited;

      expect(exitCode).toBe(0);
      expect(exitedAt! - signalledAt).toBeGreaterThanOrEqual(SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS);
      expect(exitedAt! - signalledAt).toBeLessThan(SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS + MARGIN_MS);
      expect(instance.output).toContain(`SIGTERM: requests still running after SHUTDOWN_TIMEOUT_MS (${SHUTDOWN_TIMEOUT_MS} ms); closed anyway`);
      expect(instance.output).not.toMatch(/server_error/);
      // The pools stayed open until the deadline; then they were closed.
      const beforeDeadline = samples.filter((s) => s.at < deadline - SAMPLE_MS);
      expect(beforeDeadline.length).toBeGreaterThan(10);
      expect(beforeDeadline.filter((s) => s.idle === 0)).toEqual([]);
      for (let waited = 0; (await idleOfInstance()) > 0; waited += SAMPLE_MS) {
        if (waited > 2000) throw new Error('the instance left idle connections behind');
        await sleep(SAMPLE_MS);
      }
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await Promise.all([holder.end(), monitor.end()]);
    }
  }, 60_000);
});
