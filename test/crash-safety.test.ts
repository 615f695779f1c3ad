/**
 * Crash safety: `kill -9` in the middle of code exchanges and registrations, then a restart on
 * the same database. Whatever the service answered before it died holds afterwards:
 * - no code is redeemed twice (a code that was answered 200 never is again);
 * - no token answered 200 fails afterwards (its access token at userinfo, its refresh token at the token endpoint);
 * - no webhook event is lost (every token answered 200 has its `token.issued` in the outbox;
 *   test/webhooks/delivery-crash.test.ts proves the outbox is delivered across a crash);
 * - no client is half-registered (every 201's credentials work; every stored client is whole,
 *   with its audit row; none is left by a registration that was answered otherwise).
 * The kill comes once some requests of both kinds have been answered, right after a few more of
 * each have reached the socket whole: too soon for the server to have answered those (each needs
 * round trips to the stores), so the crash provably cuts requests it was given.
 * `CRASH_COUNTS=1` prints how many of each the crash cut.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { Browser } from './helpers/browser.js';
import type { TestClient } from './helpers/browser.js';
import { buildDist } from './helpers/build.js';
import { basicAuth, registerClient } from './helpers/fixtures.js';
import { startInstance, stopInstance } from './helpers/instance.js';
import type { Instance } from './helpers/instance.js';
import { runCli } from './helpers/cli.js';
import { createTestDatabase, deleteRedisKeys, REDIS_URL, testRedisPrefix } from './helpers/services.js';
import type { TestDatabase } from './helpers/services.js';
import type { TestApp } from './helpers/test-app.js';
import { trackedPost } from './helpers/tracked-request.js';
import type { Outcome, TrackedRequest } from './helpers/tracked-request.js';

const USER = { username: 'crash', password: 'correct horse battery' };
const EXCHANGES = 40;
/** Registrations answer faster than exchanges: streams of them, each sending its next as soon as one is answered, run until the kill. */
const REGISTRATION_STREAMS = 4;
/** Requests of each kind sent last, the kill following as soon as the socket has taken them whole. */
const SENT_AT_KILL = 2;
/** How long the test waits for that moment before it kills anyway (and fails). */
const KILL_WAIT_MS = 20_000;

type TokenBody = { access_token?: string; refresh_token?: string; error?: string };
type Registered = TestClient & { client_name: string };

function exchange(baseUrl: string, client: TestClient, code: string): TrackedRequest<TokenBody> {
  return trackedPost(`${baseUrl}/api/token.php`, { 'content-type': 'application/x-www-form-urlencoded' },
    new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }).toString());
}

function register(baseUrl: string, i: number): TrackedRequest<Registered> {
  return trackedPost(`${baseUrl}/api/register.php`, { 'content-type': 'application/json' },
    JSON.stringify({ client_name: `Crash ${i}`, redirect_uri: 'http://localhost:9999/callback' }));
}

/** The answer of a request to the running service (no answer fails the test). */
async function answer<T>(request: TrackedRequest<T>) {
  const outcome = await request.outcome;
  if (!outcome.answered) throw new Error('the running service did not answer');
  return outcome;
}

/** Requests the kill cut after the service had been given them whole. */
const cut = (outcomes: Outcome<unknown>[]) => outcomes.filter((o) => !o.answered && o.sentWhole).length;

describe('kill -9 during exchanges and registrations, then a restart', () => {
  let database: TestDatabase;
  const prefix = testRedisPrefix();
  let env: Record<string, string>;
  let instance: Instance;

  beforeAll(async () => {
    await buildDist();
    database = await createTestDatabase({ migrated: true });
    env = {
      DATABASE_URL: database.url, REDIS_URL, REDIS_KEY_PREFIX: prefix,
      RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '3600000',
    };
    instance = await startInstance(env);
    const created = await runCli(['user:create', '--username', USER.username, '--password', USER.password, '--email', 'crash@example.com', '--full-name', 'Crash'], env);
    expect(created.code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    if (instance) await stopInstance(instance);
    await database?.drop();
    await deleteRedisKeys(prefix);
  });

  test('what was answered before the crash holds after it', async () => {
    const client = await registerClient({ baseUrl: instance.baseUrl } as TestApp);
    // Nothing listens on the discard port: deliveries wait in the outbox (retry in an hour).
    const hook = await fetch(`${instance.baseUrl}/api/webhooks.php`, {
      method: 'POST', headers: { authorization: basicAuth(client), 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['token.issued'] }),
    });
    expect(hook.status).toBe(201);
    // A browser each: a grant (and so a grant_id in its event) per code.
    const codes: string[] = [];
    for (let i = 0; i < EXCHANGES + SENT_AT_KILL; i += 1) codes.push((await new Browser(instance.baseUrl).authorize(client, USER)).searchParams.get('code')!);

    // Registrations in streams until the kill; once one has been answered, the exchanges all at
    // once. Once a few exchanges have been answered, the last requests of each kind go out and
    // the process is killed as soon as the socket has taken them whole. Answers come in bursts
    // (a whole burst may be on the wire already when its first answer is read), so requests
    // merely unanswered at the kill could be answered still: the last ones cannot.
    const exchanges: TrackedRequest<TokenBody>[] = [];
    const registrations: TrackedRequest<Registered>[] = [];
    const answered = (requests: TrackedRequest<unknown>[]) => requests.filter((r) => r.answered).length;
    let killed = false;
    const kill = () => {
      if (killed) return;
      killed = true;
      instance.child.kill('SIGKILL');
    };
    let killing = false;
    const killWhenReady = () => {
      if (killing || answered(exchanges) < 4 || answered(registrations) < 1) return;
      killing = true;
      const lastExchanges = codes.slice(EXCHANGES).map((code) => exchange(instance.baseUrl, client, code));
      const lastRegistrations = Array.from({ length: SENT_AT_KILL }, (_, i) => register(instance.baseUrl, registrations.length + i));
      exchanges.push(...lastExchanges);
      registrations.push(...lastRegistrations);
      void Promise.all([...lastExchanges, ...lastRegistrations].map((r) => r.sent)).then(kill);
    };
    const giveUp = setTimeout(kill, KILL_WAIT_MS); // the counts below then fail
    const streams = Array.from({ length: REGISTRATION_STREAMS }, async () => {
      while (!killed && !killing) {
        const request = register(instance.baseUrl, registrations.length);
        registrations.push(request);
        await request.outcome;
        killWhenReady();
      }
    });
    while (!killed && answered(registrations) === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    for (const code of codes.slice(0, EXCHANGES)) {
      const request = exchange(instance.baseUrl, client, code);
      exchanges.push(request);
      void request.outcome.then(killWhenReady);
    }
    while (!killed) {
      killWhenReady();
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await instance.exited;
    clearTimeout(giveUp);
    const before = await Promise.all(exchanges.map((r) => r.outcome));
    await Promise.all(streams);
    const registered = await Promise.all(registrations.map((r) => r.outcome));
    if (process.env.CRASH_COUNTS) console.log(`cut: ${cut(before)} of ${before.length} exchanges, ${cut(registered)} of ${registered.length} registrations`);
    // The crash did land in the middle of both kinds, after some of each had been answered.
    expect(cut(before)).toBeGreaterThan(0);
    expect(cut(registered)).toBeGreaterThan(0);
    expect(registered.some((o) => o.answered)).toBe(true);

    instance = await startInstance(env, { port: instance.port, dataDir: instance.dataDir });

    // No token answered 200 fails afterwards.
    const tokens = before.flatMap((o) => (o.answered && o.status === 200 ? [o.body.access_token!] : []));
    expect(tokens.length).toBeGreaterThan(0);
    for (const token of tokens) {
      const res = await fetch(`${instance.baseUrl}/api/userinfo.php`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
    }
    // Nor does a refresh token answered with it: each rotates once (before the replays below,
    // which end their grants), and the access token it gives works too.
    const refreshTokens = before.flatMap((o) => (o.answered && o.status === 200 ? [o.body.refresh_token!] : []));
    expect(refreshTokens).toHaveLength(tokens.length);
    for (const refreshToken of refreshTokens) {
      const res = await answer(trackedPost<TokenBody>(`${instance.baseUrl}/api/token.php`, { 'content-type': 'application/x-www-form-urlencoded' },
        new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret }).toString()));
      expect({ status: res.status, rotated: typeof res.body.refresh_token === 'string' && res.body.refresh_token !== refreshToken }).toEqual({ status: 200, rotated: true });
      const userinfo = await fetch(`${instance.baseUrl}/api/userinfo.php`, { headers: { authorization: `Bearer ${res.body.access_token}` } });
      expect(userinfo.status).toBe(200);
    }

    // Every one of them has its token.issued event in the outbox.
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const { rows } = await db.query<{ token: string; events: number }>(`
        SELECT t.id AS token, (SELECT count(*)::int FROM webhook_deliveries d
                               WHERE d.event_type = 'token.issued' AND d.payload->'data'->>'grant_id' = t.grant_id) AS events
        FROM oidc_models t WHERE t.type = 'AccessToken' AND t.id = ANY($1)`, [tokens]);
      expect(rows.map((row) => row.events)).toEqual(tokens.map(() => 1));

      // No client is half-registered: every stored client is whole, every 201's credentials work.
      const clients = await db.query<{ complete: boolean }>(`
        SELECT (client_secret_hash <> '' AND client_name <> '' AND redirect_uri <> '') AS complete FROM clients`);
      expect(clients.rows.every((row) => row.complete)).toBe(true);

      // A client row and its audit row are written in one transaction (src/clients/client-store.ts):
      // the crash leaves both or neither.
      const stored = await db.query<{ client_id: string; client_name: string; digest: boolean; audited: number }>(`
        SELECT c.client_id, c.client_name, c.client_secret_hash ~ '^[0-9a-f]{64}$' AS digest,
          (SELECT count(*)::int FROM audit_events a WHERE a.event = 'client.registered' AND a.client_id = c.client_id
             AND a.detail->>'client_name' = c.client_name AND a.detail->>'redirect_uri' = c.redirect_uri) AS audited
        FROM clients c`);
      expect(stored.rows.filter((row) => !row.digest || row.audited !== 1)).toEqual([]);
      const auditedOnly = await db.query(`
        SELECT a.client_id FROM audit_events a
        WHERE a.event = 'client.registered' AND NOT EXISTS (SELECT 1 FROM clients c WHERE c.client_id = a.client_id)`);
      expect(auditedOnly.rows).toEqual([]);

      // A stored client its caller cannot know about comes only from a registration the crash
      // cut (and is whole, as above), never from one that was answered with an error.
      const crashClients = stored.rows.filter((row) => row.client_name.startsWith('Crash '));
      expect(stored.rows.filter((row) => !crashClients.includes(row)).map((row) => row.client_id)).toEqual([client.client_id]);
      for (const row of crashClients) {
        const outcome = registered[Number(row.client_name.slice('Crash '.length))]!;
        if (outcome.answered) expect({ status: outcome.status, client_id: outcome.body.client_id }).toEqual({ status: 201, client_id: row.client_id });
        else expect(outcome.sentWhole).toBe(true);
      }
      if (process.env.CRASH_COUNTS) console.log(`stored for a cut registration: ${crashClients.filter((row) => !registered[Number(row.client_name.slice('Crash '.length))]!.answered).length}`);
    } finally {
      await db.end();
    }
    for (const outcome of registered) {
      if (!outcome.answered) continue;
      expect(outcome.status).toBe(201);
      const res = await answer(exchange(instance.baseUrl, outcome.body, 'no-such-code'));
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: expect.objectContaining({ error: 'invalid_code' }) }); // authenticated, then refused the code
      const settings = await fetch(`${instance.baseUrl}/api/webhooks.php`, { headers: { authorization: basicAuth(outcome.body) } });
      expect({ status: settings.status, body: await settings.json() }).toEqual({ status: 200, body: { webhooks: [] } });
    }

    // No code is redeemed twice: one redeemed before the crash never is again; one whose
    // request was cut is redeemed at most once now.
    for (const [i, code] of codes.entries()) {
      const first = before[i]!;
      const again = await answer(exchange(instance.baseUrl, client, code));
      const successes = [first.answered && first.status === 200, again.status === 200].filter(Boolean).length;
      expect({ code: i, successes: successes <= 1 }).toEqual({ code: i, successes: true });
      if (first.answered && first.status === 200) expect(again.body.error).toBe('invalid_code');
    }
  }, 120_000);
});
