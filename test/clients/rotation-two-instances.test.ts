/**
 * A client secret rotated while two instances on one PostgreSQL and Redis serve the client's
 * traffic (code exchanges, refreshes, userinfo on both): with a grace, no request fails; the copy
 * of the client still deployed with the old secret keeps working on both instances until it
 * switches; the old secret works on both until the grace ends, then gets `invalid_client` on both.
 * With no grace it is refused on both at once.
 *
 * @see RFC 6749 §5.2 (invalid_client)
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser, obtainCode } from '../helpers/browser.js';
import type { TestClient } from '../helpers/browser.js';
import { createUser, expectErrorResponse, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { pageText, postSettingsForm, signInOnSettingsPage } from '../helpers/settings-page.js';
import { secondInstance, startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';
import { sleep, startTraffic, waitFor } from '../helpers/traffic.js';

/** Rotates on `t`'s settings page with `grace`; the new secret and when the old one stops (null: at once). */
async function rotateOnPage(t: TestApp, client: TestClient, grace: string) {
  const browser = new Browser(t.baseUrl);
  const page = await postSettingsForm(browser, await signInOnSettingsPage(browser, client), 'rotate_secret', { grace });
  expect(page.status).toBe(200);
  const overlaps = pageText(page, 'new_client_secret_overlap') !== 'The old secret no longer works.';
  return { secret: pageText(page, 'new_client_secret')!, until: overlaps ? Date.parse(pageText(page, 'previous_secret_expires_at')!) : null };
}

describe('two instances on one PostgreSQL and one Redis', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // Codes taken before a rotation are redeemed at set moments after it: they must outlive it.
    a = await startTestApp({ env: { AUTHORIZATION_CODE_TTL: '600' } });
    b = await secondInstance(a);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const exchange = async (code: { on: TestApp; secret: string }, client: TestClient, user: Awaited<ReturnType<typeof createUser>>) =>
    tokenRequest(code.on, { code: await obtainCode(code.on === a ? b.baseUrl : a.baseUrl, client, user), client_id: client.client_id, client_secret: code.secret });
  /**
   * Codes for `count` later exchanges, taken now: at a set moment, an exchange is then one request.
   * One sign-in at a time: the login guard counts a user's sign-ins in flight from one address
   * before it checks them, so more than its free failures at once would be slowed.
   */
  async function codesFor(client: TestClient, user: Awaited<ReturnType<typeof createUser>>, count: number): Promise<string[]> {
    const codes: string[] = [];
    for (let i = 0; i < count; i += 1) codes.push(await obtainCode([a, b][i % 2]!.baseUrl, client, user));
    return codes;
  }
  const redeem = (on: TestApp, code: string, client: TestClient, secret: string) => tokenRequest(on, { code, client_id: client.client_id, client_secret: secret });

  test('a rotation with a grace under traffic: zero failed requests; the old secret works on both until the grace ends, then invalid_client on both', async () => {
    const client = await registerClient(a);
    const user = await createUser(a);
    const [beforeEndOnA, beforeEndOnB, afterEndOnA, afterEndOnB, newOnA, newOnB] = await codesFor(client, user, 6);
    let latest = client.client_secret;
    let oldCopyRedeployed = false;
    // Worker 0 is a copy of the client deployed with the old secret until it is redeployed; worker 1 takes the new secret at once.
    const traffic = startTraffic([a, b], client, user, { workers: 2, secretOf: (worker) => (worker === 0 && !oldCopyRedeployed ? client.client_secret : latest) });
    try {
      await waitFor('traffic before the rotation', () => traffic.succeeded('code exchange') >= 4, 30_000);
      const rotated = await rotateOnPage(a, client, '15s');
      const rotatedAt = Date.now();
      latest = rotated.secret;
      expect(rotated.until! - rotatedAt).toBeGreaterThan(13_000);

      // After the rotation, the old copy's token requests (exchanges on one instance, refreshes on the other) keep succeeding on both.
      const oldCopyOn = (t: TestApp) => traffic.outcomes.filter((o) => o.worker === 0 && o.instance === t.baseUrl && o.at > rotatedAt + 200 && o.status === 200 && o.what !== 'userinfo' && o.what !== 'authorize').length;
      await waitFor('the old copy on both instances after the rotation', () => oldCopyOn(a) >= 2 && oldCopyOn(b) >= 2 && traffic.succeeded('code exchange', rotatedAt + 200) >= 4, rotated.until! - Date.now() - 3000);
      oldCopyRedeployed = true;
      const redeployedAt = Date.now();
      await waitFor('the redeployed copy', () => traffic.outcomes.some((o) => o.worker === 0 && o.what === 'refresh' && o.status === 200 && o.at > redeployedAt + 200), rotated.until! - Date.now() - 3000);
      await traffic.stop();
      expect(traffic.failures()).toEqual([]);
      expect(traffic.succeeded('userinfo', rotatedAt)).toBeGreaterThan(0);

      // The old secret, on both instances: accepted up to the end of its grace, refused after it.
      await sleep(rotated.until! - 2000 - Date.now());
      const lastMoment = await Promise.all([redeem(a, beforeEndOnA!, client, client.client_secret), redeem(b, beforeEndOnB!, client, client.client_secret)]);
      expect(lastMoment.map((res) => res.status)).toEqual([200, 200]);
      await sleep(rotated.until! - Date.now() + 50);
      expectErrorResponse(await redeem(a, afterEndOnA!, client, client.client_secret), 401, 'invalid_client');
      expectErrorResponse(await redeem(b, afterEndOnB!, client, client.client_secret), 401, 'invalid_client');
      expect((await redeem(a, newOnA!, client, rotated.secret)).status).toBe(200);
      expect((await redeem(b, newOnB!, client, rotated.secret)).status).toBe(200);
    } finally {
      await traffic.stop();
    }
  }, 90_000);

  test('a rotation with no grace: the old secret is refused on both instances at once, the new one works on both', async () => {
    const client = await registerClient(a);
    const user = await createUser(a);
    expect((await exchange({ on: a, secret: client.client_secret }, client, user)).status).toBe(200); // A's provider has built this client
    const rotated = await rotateOnPage(b, client, '0');
    expect(rotated.until).toBeNull();
    for (const on of [a, b]) expectErrorResponse(await exchange({ on, secret: client.client_secret }, client, user), 401, 'invalid_client');
    for (const on of [a, b]) expect((await exchange({ on, secret: rotated.secret }, client, user)).status).toBe(200);
  });
});
