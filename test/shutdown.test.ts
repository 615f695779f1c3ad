/**
 * A drained shutdown (src/main.ts): on SIGTERM under sustained load, readiness turns 503 while
 * the instance still serves, then the listener closes, every request in flight finishes — those
 * whose client already hung up included — and only then do the pools close. No request fails,
 * and no store error is logged by a request that outlived its pools.
 *
 * The load balancer is simulated: it polls readiness and stops routing once it answers 503.
 */
import http from 'node:http';
import { describe, expect, test } from '@jest/globals';
import pg from 'pg';
import type { TestClient } from './helpers/browser.js';
import { signalledService } from './helpers/signalled-service.js';

const USER = { username: 'drain', password: 'correct horse battery' };

/** In flight at the signal: plain code exchanges, and exchanges whose clients hang up inside the handler. */
const EXCHANGES = 8;
const HANG_UPS = 8;

/**
 * Sends a code exchange and hangs up while the server is inside its handler: `db` holds the
 * code's row locked, so the server's consume waits on it; once PostgreSQL shows that statement
 * blocked by `db`, the client hangs up, then the lock is released and the server finishes an
 * exchange nobody waits for. (Hanging up at a guess would race the server's reading of the body,
 * and a request the server has not read is not in flight.)
 */
async function exchangeAndHangUp(baseUrl: string, client: TestClient, code: string, db: pg.Client): Promise<'hung up' | 'answered'> {
  await db.query('BEGIN');
  await db.query("SELECT 1 FROM oidc_models WHERE type = 'AuthorizationCode' AND id = $1 FOR UPDATE", [code]);
  try {
    return await new Promise((resolve) => {
      const body = new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }).toString();
      const req = http.request(`${baseUrl}/api/token.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } });
      let answered = false;
      req.on('response', (res) => { answered = true; res.resume(); });
      req.on('error', () => undefined);
      req.end(body, async () => {
        const deadline = Date.now() + 5000;
        while (!answered && Date.now() < deadline) {
          // pg_locks, not pg_stat_activity: the latter is read once per transaction, and this
          // watcher polls from inside the transaction that holds the lock.
          const { rows } = await db.query('SELECT 1 FROM pg_locks WHERE NOT granted AND pg_backend_pid() = ANY (pg_blocking_pids(pid))');
          if (rows.length > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 5)); // eight watchers polling flat out would starve the server
        }
        if (answered) return resolve('answered'); // refused before its consume: checked below all the same
        req.destroy();
        resolve('hung up');
      });
    });
  } finally {
    await db.query('COMMIT');
  }
}

const causeCode = (error: unknown) => (error as { cause?: { code?: string } }).cause?.code;
const refused = (error: unknown) => causeCode(error) === 'ECONNREFUSED';
/** A kept-alive connection the draining server closed as the next check was sent on it. */
const reset = (error: unknown) => ['ECONNRESET', 'UND_ERR_SOCKET'].includes(causeCode(error) ?? '');

describe('SIGTERM under load', () => {
  const service = signalledService(USER, { SHUTDOWN_DELAY_MS: '2000' }, EXCHANGES + HANG_UPS); // room for the balancer's 50 ms polls on a loaded machine

  test('readiness turns 503 first; no in-flight request fails; pools close last', async () => {
    const { database, instance, client, accessToken, codes } = service;
    let routing = true;
    const readiness: { at: number; status: number | 'refused' }[] = [];
    const outcomes = { ok: 0, failed: [] as string[] };

    // The load balancer: polls readiness, stops routing at the first 503.
    const balancer = (async () => {
      for (let i = 0; i < 400; i += 1) {
        try {
          const res = await fetch(`${instance.baseUrl}/healthz/ready`);
          readiness.push({ at: Date.now(), status: res.status });
          if (res.status === 503) {
            expect(await res.json()).toEqual({ status: 'stopping' });
            routing = false;
          }
        } catch (error) {
          // After the first 503 the listener closes; a check racing that close on a kept-alive
          // socket is reset rather than refused: to a load balancer both mean "gone".
          if (!refused(error) && !(reset(error) && !routing)) throw error;
          readiness.push({ at: Date.now(), status: 'refused' });
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    // Sustained load while routed: userinfo and introspection, 12 at a time.
    const worker = async () => {
      while (routing) {
        try {
          const res = await fetch(`${instance.baseUrl}/api/userinfo.php`, { headers: { authorization: `Bearer ${accessToken}` } });
          await res.arrayBuffer();
          if (res.status === 200) outcomes.ok += 1;
          else outcomes.failed.push(`userinfo ${res.status}`);
        } catch (error) {
          outcomes.failed.push(`userinfo: ${String((error as Error).cause ?? error)}`);
        }
      }
    };
    const workers = Array.from({ length: 12 }, worker);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const okBefore = outcomes.ok;

    // In flight at the signal: code exchanges, and some whose clients hang up inside the handler.
    const exchanges = codes.slice(0, EXCHANGES).map(async (code) => {
      const res = await fetch(`${instance.baseUrl}/api/token.php`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }).toString(),
      });
      const body = await res.json() as { access_token?: string };
      if (res.status !== 200) outcomes.failed.push(`exchange ${res.status}`);
      return body.access_token;
    });
    const watchers = await Promise.all(codes.slice(EXCHANGES).map(async () => {
      const db = new pg.Client({ connectionString: database.url });
      await db.connect();
      return db;
    }));
    const hangUps = codes.slice(EXCHANGES).map((code, i) => exchangeAndHangUp(instance.baseUrl, client, code, watchers[i]!));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const signalledAt = Date.now();
    instance.child.kill('SIGTERM');

    const [issued, hungUp] = await Promise.all([Promise.all(exchanges), Promise.all(hangUps), ...workers, balancer])
      .finally(() => Promise.all(watchers.map((db) => db.end())));
    const code = await instance.exited;

    expect(outcomes.failed).toEqual([]);
    expect(outcomes.ok).toBeGreaterThan(okBefore); // still served while draining
    expect(issued.every((token) => typeof token === 'string')).toBe(true);
    expect(hungUp).toContain('hung up');
    expect(code).toBe(0);

    // Readiness: 200, then 503 after the signal, and only then refused connections.
    const firstStopping = readiness.findIndex((r) => r.status === 503);
    const firstRefused = readiness.findIndex((r) => r.status === 'refused');
    expect(firstStopping).toBeGreaterThan(0);
    expect(readiness[firstStopping]!.at).toBeGreaterThanOrEqual(signalledAt);
    expect(firstRefused).toBeGreaterThan(firstStopping);

    // The hung-up clients' exchanges ran to the end: every code is consumed and has its token.
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const { rows } = await db.query<{ consumed: number; tokens: number }>(`
        SELECT (SELECT count(*)::int FROM oidc_models WHERE type = 'AuthorizationCode' AND id = ANY($1) AND consumed_at IS NOT NULL) AS consumed,
               (SELECT count(*)::int FROM oidc_models WHERE type = 'AccessToken' AND payload->>'clientId' = $2) AS tokens`, [codes, client.client_id]);
      expect(rows[0]).toEqual({ consumed: EXCHANGES + HANG_UPS, tokens: 1 + EXCHANGES + HANG_UPS });
    } finally {
      await db.end();
    }
    // No request outlived the pools.
    expect(instance.output).not.toMatch(/pool|server_error|still running|Error/i);
  }, 60_000);
});

describe('SIGINT (Ctrl-C at a terminal) drains the same way', () => {
  const service = signalledService({ username: 'interrupt', password: 'correct horse battery' }, { SHUTDOWN_DELAY_MS: '300' }, 1);

  test('readiness turns 503, the exchange in flight is answered 200, then the process exits 0', async () => {
    const { instance, database, client, codes: [code] } = service;
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      // The exchange is held inside its handler: its code's row is locked here.
      await db.query('BEGIN');
      await db.query("SELECT 1 FROM oidc_models WHERE type = 'AuthorizationCode' AND id = $1 FOR UPDATE", [code]);
      const exchange = fetch(`${instance.baseUrl}/api/token.php`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ code: code!, client_id: client.client_id, client_secret: client.client_secret }).toString(),
      });
      for (let waited = 0; (await db.query('SELECT 1 FROM pg_locks WHERE NOT granted AND pg_backend_pid() = ANY (pg_blocking_pids(pid))')).rows.length === 0; waited += 10) {
        if (waited > 5000) throw new Error('the exchange never reached its consume');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      instance.child.kill('SIGINT');
      let ready = await fetch(`${instance.baseUrl}/healthz/ready`);
      for (let waited = 0; ready.status === 200 && waited < 2000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        ready = await fetch(`${instance.baseUrl}/healthz/ready`);
      }
      expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 503, body: expect.objectContaining({ status: 'stopping' }) });
      await db.query('COMMIT');
      const res = await exchange;
      expect({ status: res.status, token: typeof ((await res.json()) as { access_token?: unknown }).access_token }).toEqual({ status: 200, token: 'string' });
      expect(await instance.exited).toBe(0);
      expect(instance.output).not.toMatch(/pool|server_error|still running|Error/i);
    } finally {
      await db.end();
    }
  }, 60_000);
});
