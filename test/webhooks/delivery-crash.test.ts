/**
 * Crash safety of delivery (docs/webhooks.md "Claiming", docs/failure-behaviour.md "Crash
 * safety"): `kill -9` while attempts are in flight, held open by a receiver that takes the
 * request and never answers, leaves their messages leased to a worker that no longer exists.
 * After a restart on the same database each is sent again, with the same `webhook-id`, once its
 * lease has expired, and recorded delivered (at-least-once). The `token.issued` of every
 * exchange answered 200 before the kill is delivered too.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { Browser } from '../helpers/browser.js';
import { buildDist } from '../helpers/build.js';
import { registerClient } from '../helpers/fixtures.js';
import { startInstance, stopInstance } from '../helpers/instance.js';
import type { Instance } from '../helpers/instance.js';
import { startReceiver, verify, webhooksApi } from '../helpers/receiver.js';
import type { Hit, Receiver } from '../helpers/receiver.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, deleteRedisKeys, REDIS_URL, testRedisPrefix } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';
import type { TestApp } from '../helpers/test-app.js';
import { trackedPost } from '../helpers/tracked-request.js';

const USER = { username: 'crash', password: 'correct horse battery' };
/** More than a worker's 8 attempts in parallel: some messages are leased at the kill, others not yet. */
const EXCHANGES = 12;
/** Short, so the test waits seconds rather than the default minute; the lease outlasts the attempt, as the service requires. */
const ATTEMPT_TIMEOUT_MS = 3000;
const LEASE_MS = 8000;
/** How long the test waits for the kill's moment, and then for every message to be delivered after the restart. */
const KILL_WAIT_MS = 20_000;
const DELIVERED_WAIT_MS = LEASE_MS + 20_000;

const webhookId = (hit: Hit) => String(hit.headers['webhook-id']);

interface Row { id: string; status: string; attempts: number; lease_owner: string | null; lease_expires_at: Date | null }

describe('kill -9 while webhook attempts are in flight, then a restart', () => {
  let database: TestDatabase;
  const prefix = testRedisPrefix();
  let env: Record<string, string>;
  let instance: Instance;
  let receiver: Receiver;
  let db: pg.Client;

  beforeAll(async () => {
    await buildDist();
    database = await createTestDatabase({ migrated: true });
    receiver = await startReceiver();
    env = {
      DATABASE_URL: database.url, REDIS_URL, REDIS_KEY_PREFIX: prefix,
      RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      // A recorded failure waits an hour: within the test only an expired lease brings a message back.
      WEBHOOK_RETRY_BASE_MS: '3600000',
      WEBHOOK_ATTEMPT_TIMEOUT_MS: String(ATTEMPT_TIMEOUT_MS), WEBHOOK_LEASE_MS: String(LEASE_MS),
    };
    instance = await startInstance(env);
    const created = await runCli(['user:create', '--username', USER.username, '--password', USER.password, '--email', 'crash@example.com', '--full-name', 'Crash'], env);
    expect(created.code).toBe(0);
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    if (instance) await stopInstance(instance);
    await receiver?.close();
    await database?.drop();
    await deleteRedisKeys(prefix);
  });

  test('a message in flight is sent again with the same webhook-id once its lease expires; no event is lost', async () => {
    const client = await registerClient({ baseUrl: instance.baseUrl } as TestApp);
    const hook = await webhooksApi(instance.baseUrl, client, { json: { url: receiver.url(), events: ['token.issued'] } });
    expect(hook.status).toBe(201);
    const codes: string[] = [];
    for (let i = 0; i < EXCHANGES; i += 1) codes.push((await new Browser(instance.baseUrl).authorize(client, USER)).searchParams.get('code')!);

    // The receiver takes every request and holds it: each attempt stays in flight. The process
    // is killed as soon as one is held and an exchange has been answered.
    receiver.respond = () => 'hang';
    const exchanges = codes.map((code) => trackedPost<{ access_token?: string }>(`${instance.baseUrl}/api/token.php`,
      { 'content-type': 'application/x-www-form-urlencoded' },
      new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }).toString()));
    const ready = () => receiver.hits.length > 0 && exchanges.some((r) => r.answered);
    for (let waited = 0; !ready() && waited < KILL_WAIT_MS; waited += 2) await new Promise((resolve) => setTimeout(resolve, 2));
    instance.child.kill('SIGKILL');
    await instance.exited;
    const before = await Promise.all(exchanges.map((r) => r.outcome));
    const held = [...receiver.hits];
    const tokens = before.flatMap((o) => (o.answered && o.status === 200 ? [o.body.access_token!] : []));
    if (process.env.CRASH_COUNTS) console.log(`held at the kill: ${held.length}; exchanges answered 200: ${tokens.length} of ${before.length}`);
    expect(held.length).toBeGreaterThan(0);
    expect(tokens.length).toBeGreaterThan(0);

    // What the crash left: each held message claimed (leased to the dead worker), its attempt
    // never recorded.
    const left = new Map((await db.query<Row>('SELECT id, status, attempts, lease_owner, lease_expires_at FROM webhook_deliveries')).rows.map((row) => [row.id, row]));
    for (const hit of held) {
      expect(left.get(webhookId(hit))).toEqual({ id: webhookId(hit), status: 'pending', attempts: 0, lease_owner: expect.any(String), lease_expires_at: expect.any(Date) });
    }

    receiver.respond = () => 200;
    const restartedAt = Date.now();
    instance = await startInstance(env, { port: instance.port, dataDir: instance.dataDir });
    const deadline = Date.now() + DELIVERED_WAIT_MS;
    const undelivered = async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'delivered'`)).rows[0]!.n;
    while (await undelivered() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const { rows } = await db.query<Row>('SELECT id, status, attempts, lease_owner, lease_expires_at FROM webhook_deliveries');
    expect(rows.filter((row) => row.status !== 'delivered')).toEqual([]);

    // Every message reached the receiver exactly once after the restart, and was answered 200.
    const after = receiver.hits.filter((hit) => hit.receivedAt >= restartedAt);
    expect(after.length + held.length).toBe(receiver.hits.length);
    expect(after.map(webhookId).sort()).toEqual(rows.map((row) => row.id).sort());

    // A held message came back with the same webhook-id and body, signed afresh, not before its
    // lease ran out.
    for (const hit of held) {
      const again = after.find((h) => webhookId(h) === webhookId(hit))!;
      expect(again.body).toBe(hit.body);
      expect(verify(again, String(hook.body.secret))).toMatchObject({ id: hit.event.id, type: 'token.issued' });
      expect(again.receivedAt).toBeGreaterThanOrEqual(left.get(webhookId(hit))!.lease_expires_at!.getTime());
    }

    // No event lost: every token answered 200 before the kill has its token.issued delivered.
    const issued = await db.query<{ token: string; message: string }>(`
      SELECT t.id AS token, d.id AS message FROM oidc_models t
      JOIN webhook_deliveries d ON d.event_type = 'token.issued' AND d.payload->'data'->>'grant_id' = t.grant_id
      WHERE t.type = 'AccessToken' AND t.id = ANY($1)`, [tokens]);
    expect(issued.rows.map((row) => row.token).sort()).toEqual([...tokens].sort());
    const delivered = new Set(after.map(webhookId));
    expect(issued.rows.filter((row) => !delivered.has(row.message))).toEqual([]);
  }, 120_000);
});
