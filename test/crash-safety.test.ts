/**
 * Crash safety: `kill -9` in the middle of code exchanges and registrations, then a restart on
 * the same database. Whatever the service answered before it died holds afterwards:
 * - no code is redeemed twice (a code that was answered 200 never is again);
 * - no token answered 200 fails afterwards;
 * - no webhook event is lost (every token answered 200 has its `token.issued` in the outbox);
 * - no client is half-registered (every 201's credentials work; every stored client is whole).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { Browser } from './helpers/browser.js';
import type { TestClient } from './helpers/browser.js';
import { buildDist } from './helpers/build.js';
import { basicAuth, registerClient } from './helpers/fixtures.js';
import { startInstance, stopInstance } from './helpers/instance.js';
import type { Instance } from './helpers/instance.js';
import { runNode } from './helpers/run-node.js';
import { createTestDatabase, deleteRedisKeys, REDIS_URL, testRedisPrefix } from './helpers/services.js';
import type { TestDatabase } from './helpers/services.js';
import type { TestApp } from './helpers/test-app.js';

const USER = { username: 'crash', password: 'correct horse battery' };
const EXCHANGES = 40;
const REGISTRATIONS = 20;

async function exchange(baseUrl: string, client: TestClient, code: string) {
  const res = await fetch(`${baseUrl}/api/token.php`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }).toString(),
  });
  return { status: res.status, body: await res.json() as { access_token?: string; error?: string } };
}

async function register(baseUrl: string, i: number) {
  const res = await fetch(`${baseUrl}/api/register.php`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: `Crash ${i}`, redirect_uri: 'http://localhost:9999/callback' }),
  });
  return { status: res.status, body: await res.json() as TestClient };
}

/** What a request got before the crash: an answer, or nothing (cut). */
type Outcome<T> = { answered: true; value: T } | { answered: false };

const settle = <T>(work: Promise<T>): Promise<Outcome<T>> => work.then((value) => ({ answered: true as const, value }), () => ({ answered: false as const }));

describe('kill -9 during exchanges and registrations, then a restart', () => {
  let database: TestDatabase;
  const prefix = testRedisPrefix();
  let env: Record<string, string>;
  let instance: Instance;

  beforeAll(async () => {
    await buildDist();
    database = await createTestDatabase();
    env = {
      DATABASE_URL: database.url, REDIS_URL, REDIS_KEY_PREFIX: prefix,
      RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '3600000',
    };
    instance = await startInstance(env);
    const created = await runNode('dist/cli.js', ['user:create', '--username', USER.username, '--password', USER.password, '--email', 'crash@example.com', '--full-name', 'Crash'], env);
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
    for (let i = 0; i < EXCHANGES; i += 1) codes.push((await new Browser(instance.baseUrl).authorize(client, USER)).searchParams.get('code')!);

    // Everything at once; the process is killed once a few have been answered.
    // Registrations answer faster than exchanges: wait for a few of each kind.
    const answered = { exchanges: 0, registrations: 0 };
    const count = <T>(kind: keyof typeof answered, work: Promise<T>) => work.then((value) => { answered[kind] += 1; return value; });
    const exchanges = codes.map((code) => settle(count('exchanges', exchange(instance.baseUrl, client, code))));
    const registrations = Array.from({ length: REGISTRATIONS }, (_, i) => settle(count('registrations', register(instance.baseUrl, i))));
    const enough = () => answered.exchanges >= 4 && answered.registrations >= 1;
    for (let waited = 0; !enough() && waited < 20_000; waited += 2) await new Promise((resolve) => setTimeout(resolve, 2));
    instance.child.kill('SIGKILL');
    const before = await Promise.all(exchanges);
    const registered = await Promise.all(registrations);
    await instance.exited;
    const cut = before.filter((o) => !o.answered).length + registered.filter((o) => !o.answered).length;
    expect(cut).toBeGreaterThan(0); // the crash did land in the middle

    instance = await startInstance(env, { port: instance.port, dataDir: instance.dataDir });

    // No token answered 200 fails afterwards.
    const tokens = before.flatMap((o) => (o.answered && o.value.status === 200 ? [o.value.body.access_token!] : []));
    expect(tokens.length).toBeGreaterThan(0);
    for (const token of tokens) {
      const res = await fetch(`${instance.baseUrl}/api/userinfo.php`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
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
    } finally {
      await db.end();
    }
    for (const outcome of registered) {
      if (!outcome.answered) continue;
      expect(outcome.value.status).toBe(201);
      const res = await exchange(instance.baseUrl, outcome.value.body, 'no-such-code');
      expect(res).toEqual({ status: 400, body: expect.objectContaining({ error: 'invalid_code' }) }); // authenticated, then refused the code
    }

    // No code is redeemed twice: one redeemed before the crash never is again; one whose
    // request was cut is redeemed at most once now.
    for (const [i, code] of codes.entries()) {
      const first = before[i]!;
      const again = await exchange(instance.baseUrl, client, code);
      const successes = [first.answered && first.value.status === 200, again.status === 200].filter(Boolean).length;
      expect({ code: i, successes: successes <= 1 }).toEqual({ code: i, successes: true });
      if (first.answered && first.value.status === 200) expect(again.body.error).toBe('invalid_code');
    }
  }, 120_000);
});
