/**
 * Several instances on one database: their workers race for the same outbox, and every
 * attempt is made once (FOR UPDATE SKIP LOCKED + leases). Proven on real Postgres, where the
 * race is real; the embedded mode delivers too.
 */
import { describe, expect, test } from '@jest/globals';
import { createUser, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { obtainCode } from '../helpers/browser.js';
import { startReceiver, verify, webhooksApi } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';

const ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' };

describe('two app instances on one database', () => {
  test('each message is delivered once, though both workers claim from the same outbox', async () => {
    const a = await startTestApp({ mode: 'postgres', env: ENV });
    const b = await startTestApp({ reuse: { ...a.env, PORT: '0' } });
    const receiver = await startReceiver();
    // A slow receiver keeps claims in flight while the other worker polls.
    receiver.respond = () => ({ status: 200, delayMs: 20 });
    try {
      const client = await registerClient(a);
      const hooks = [];
      for (const path of ['/one', '/two']) {
        const res = await webhooksApi(a.baseUrl, client, { json: { url: receiver.url(path), events: ['client.secret_rotated'] } });
        hooks.push(res.body);
      }
      const events = 40;
      await Promise.all(Array.from({ length: events }, (_, i) => (i % 2 ? a : b).app.records.alone((record) => record.event('client.secret_rotated', {
        client_id: client.client_id, client_name: 'Test App',
      }))));

      const expected = events * hooks.length;
      const deadline = Date.now() + 20_000;
      while (receiver.hits.length < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      await new Promise((resolve) => setTimeout(resolve, 500)); // a duplicate would arrive now
      const ids = receiver.hits.map((hit) => String(hit.headers['webhook-id']));
      expect(ids).toHaveLength(expected);
      expect(new Set(ids).size).toBe(expected);

      const rows = await a.app.db.prisma.webhookDelivery.findMany({ select: { status: true, attempts: true } });
      expect(rows).toHaveLength(expected);
      expect(rows.every((row) => row.status === 'delivered' && row.attempts === 1)).toBe(true);
    } finally {
      await b.close({ keepData: true });
      await a.close();
      await receiver.close();
    }
  }, 60_000);
});

describe('embedded mode (PGlite)', () => {
  test('token.issued and a test event are delivered and verify', async () => {
    const t = await startTestApp({ mode: 'embedded', env: ENV });
    const receiver = await startReceiver();
    try {
      const user = await createUser(t);
      const client = await registerClient(t);
      const hook = await webhooksApi(t.baseUrl, client, { json: { url: receiver.url(), events: ['token.issued'] } });
      expect(hook.status).toBe(201);
      const code = await obtainCode(t.baseUrl, client, user);
      expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret })).status).toBe(200);
      const issued = await receiver.next((h) => h.event.type === 'token.issued', 5000);
      expect(verify(issued, String(hook.body.secret))).toMatchObject({ type: 'token.issued', data: { username: user.username } });

      const test = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: String(hook.body.id), action: 'test' } });
      const hit = await receiver.next((h) => h.headers['webhook-id'] === test.body.delivery_id, 5000);
      expect(verify(hit, String(hook.body.secret))).toMatchObject({ type: 'webhook.test' });
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});
