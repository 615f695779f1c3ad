/**
 * A webhook signing secret rotated while two instances on one PostgreSQL and Redis serve traffic
 * (code exchanges, refreshes, userinfo on both) and both instances' workers deliver its
 * `token.issued` and `token.refreshed` events: no request fails, and no delivery attempt either.
 * The receiver accepts only what verifies with the secret it knows, and switches from the old
 * secret to the new one in the middle of the grace, when it likes. Every delivery signed during
 * the overlap verifies for a receiver that knows only the old secret and for one that knows only
 * the new (`standardwebhooks`' Webhook.verify, as receivers do); after the grace, only the new.
 *
 * @see https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md ("Webhook headers")
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startReceiver, verifies, webhooksApi } from '../helpers/receiver.js';
import type { Hit, Receiver } from '../helpers/receiver.js';
import { secondInstance, startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';
import { sleep, startTraffic, waitFor } from '../helpers/traffic.js';

const signedAt = (hit: Hit) => Number(hit.headers['webhook-timestamp']) * 1000;

describe('two instances on one PostgreSQL and one Redis', () => {
  let a: TestApp;
  let b: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    a = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' } });
    b = await secondInstance(a);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await receiver?.close();
  });

  test('a signing-secret rotation under traffic: zero failed requests and attempts; both secrets verify every delivery of the overlap', async () => {
    const client = await registerClient(a);
    const user = await createUser(a);
    const added = await webhooksApi(a.baseUrl, client, { json: { url: receiver.url('/rotating'), events: ['token.issued', 'token.refreshed'] } });
    const old = String(added.body.secret);
    const endpointId = String(added.body.id);
    let known = old; // the receiver's secret: it answers 401 to what does not verify with it
    receiver.respond = (hit) => (verifies(hit, known) ? 200 : 401);
    const ours = () => receiver.hits.filter((hit) => hit.path === '/rotating');

    const traffic = startTraffic([a, b], client, user, { workers: 2, secretOf: () => client.client_secret });
    let fresh: string;
    let until: number;
    let rotatedAt: number;
    try {
      await waitFor('deliveries before the rotation', () => ours().length >= 4, 30_000);
      const rotated = await webhooksApi(b.baseUrl, client, { method: 'POST', query: { id: endpointId, action: 'rotate_secret', grace: '10s' } });
      expect(rotated.status).toBe(200);
      fresh = String(rotated.body.secret);
      until = Date.parse(String(rotated.body.previous_secret_expires_at));
      rotatedAt = Date.now();

      // Half-way through the grace the receiver switches to the new secret; deliveries go on meanwhile.
      await waitFor('deliveries after the rotation', () => ours().filter((hit) => signedAt(hit) > rotatedAt).length >= 4, until - Date.now() - 4000);
      await sleep(rotatedAt + (until - rotatedAt) / 2 - Date.now());
      known = fresh;
      const switchedAt = Date.now();
      await waitFor('deliveries after the switch', () => ours().filter((hit) => hit.receivedAt > switchedAt + 100).length >= 4, until - Date.now() - 1000);
      await traffic.stop();
      expect(traffic.failures()).toEqual([]);
    } finally {
      await traffic.stop();
    }

    // Everything raised is delivered at its first attempt: no receiver ever refused a signature.
    await waitFor('the outbox to drain', async () => await a.app.db.prisma.webhookDelivery.count({ where: { endpointId, status: 'pending' } }) === 0, 20_000);
    const deliveries = await a.app.db.prisma.webhookDelivery.findMany({ where: { endpointId } });
    expect(deliveries.length).toBe(ours().length);
    expect(deliveries.filter((row) => row.status !== 'delivered' || row.attempts !== 1)).toEqual([]);

    // Signed in the overlap (new secret first, then the old): a receiver with either secret alone verifies.
    const overlap = ours().filter((hit) => String(hit.headers['webhook-signature']).includes(' '));
    expect(overlap.length).toBeGreaterThanOrEqual(8);
    for (const hit of overlap) {
      expect({ id: hit.headers['webhook-id'], old: verifies(hit, old), fresh: verifies(hit, fresh!) }).toEqual({ id: hit.headers['webhook-id'], old: true, fresh: true });
      expect(signedAt(hit)).toBeLessThan(until!);
    }
    // Signed before the rotation: the old secret alone; signed after the grace (the outbox drained
    // late on a loaded machine): the new one alone. Nothing else is outside the overlap.
    const alone = (hit: (typeof overlap)[number]) => ({ old: verifies(hit, old), fresh: verifies(hit, fresh!) });
    const outside = ours().filter((hit) => !overlap.includes(hit));
    expect(outside.filter((hit) => signedAt(hit) < rotatedAt!).map(alone).filter((s) => !s.old || s.fresh)).toEqual([]);
    expect(outside.filter((hit) => signedAt(hit) >= rotatedAt!).map((hit) => ({ ...alone(hit), afterGrace: signedAt(hit) >= until! }))
      .filter((s) => !s.afterGrace || s.old || !s.fresh)).toEqual([]);

    // After the grace: the new secret alone.
    await sleep(until! - Date.now() + 50);
    const queued = await webhooksApi(a.baseUrl, client, { method: 'POST', query: { id: endpointId, action: 'test' } });
    const after = await receiver.next((hit) => hit.headers['webhook-id'] === queued.body.delivery_id);
    expect({ signatures: String(after.headers['webhook-signature']).split(' ').length, old: verifies(after, old), fresh: verifies(after, fresh!) })
      .toEqual({ signatures: 1, old: false, fresh: true });
  }, 90_000);
});
