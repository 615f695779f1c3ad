/**
 * An authorization code is redeemed at most once, even when the redemptions race.
 *
 * The provider checks `consumed` and then consumes, so parallel requests all pass the check;
 * only the store's atomic consume lets exactly one through. On real Postgres 12 parallel
 * requests expose a check-then-set race in most, not all, rounds, hence several rounds.
 * PGlite runs queries one at a time, so there the property holds trivially, but it must hold.
 *
 * @see RFC 6749 §4.1.2 (the code MUST NOT be used more than once; a second use SHOULD revoke
 *      the tokens already issued for it)
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { obtainCode } from '../helpers/browser.js';
import { createUser, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const PARALLEL = 12;
const ROUNDS = 5;

describe.each<Mode>(['postgres', 'embedded'])('authorization code redemption (%s)', (mode) => {
  let t: TestApp;
  let user: TestUser;
  let client: TestClient;
  beforeAll(async () => {
    t = await startTestApp({ mode });
    user = await createUser(t);
    client = await registerClient(t);
  });
  afterAll(async () => { await t?.close(); });

  const redeem = (code: string) => tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });

  test(`${PARALLEL} parallel redemptions of one code: exactly one 200, the rest 400 invalid_code (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round += 1) {
      const code = await obtainCode(t.baseUrl, client, user);
      const responses = await Promise.all(Array.from({ length: PARALLEL }, () => redeem(code)));
      const granted = responses.filter((res) => res.status === 200);
      const refused = responses.filter((res) => res.status !== 200);
      expect({ round, granted: granted.length }).toEqual({ round, granted: 1 });
      expect(typeof granted[0]!.body.access_token).toBe('string');
      for (const res of refused) {
        expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_code' });
      }
    }
  });

  test('a replayed code is refused, and the token from its first redemption stops working', async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    const first = await redeem(code);
    expect(first.status).toBe(200);
    const bearer = `Bearer ${first.body.access_token}`;
    expect((await userinfo(t, bearer)).status).toBe(200);

    const replay = await redeem(code);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_code');

    const after = await userinfo(t, bearer);
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('invalid_token');
  });
});
