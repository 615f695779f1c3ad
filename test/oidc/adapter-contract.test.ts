/**
 * The oidc-provider adapter contract (upsert, find, findByUid, findByUserCode, consume,
 * destroy, revokeByGrantId), written once and run against every store that implements it.
 *
 * @see https://github.com/panva/node-oidc-provider/blob/main/example/my_adapter.js
 * @see RFC 6749 §4.1.2 (a code MUST NOT be used more than once)
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { errors } from 'oidc-provider';
import type { Adapter, AdapterFor, AdapterPayload } from '../../src/oidc/adapter.js';
import { memoryAdapters } from '../../src/oidc/memory-adapter.js';
import { redisAdapters } from '../../src/oidc/redis-adapter.js';
import { connectRedis } from '../../src/store/redis.js';
import { withRequestState } from '../../src/store/request-state.js';
import { openTestDatabase } from '../helpers/databases.js';
import { requestPath } from '../helpers/request-path.js';
import { deleteRedisKeys, REDIS_URL, testRedisPrefix } from '../helpers/services.js';

interface Subject {
  readonly adapters: AdapterFor;
  close(): Promise<void>;
}

type Factory = () => Promise<Subject>;

/** The provider passes no lifetime for a model whose TTL is unset. */
const NO_EXPIRY = undefined as unknown as number;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A payload shaped like the provider's: `jti`, `kind`, optional `grantId`, `uid`, `userCode`. */
function payload(kind: string, fields: Partial<AdapterPayload> = {}): AdapterPayload {
  return { jti: randomUUID(), kind, iat: nowSeconds(), exp: nowSeconds() + 60, accountId: 'account-1', ...fields };
}

function adapterContract(factory: Factory) {
  let subject: Subject;
  let codes: Adapter;
  let sessions: Adapter;
  beforeAll(async () => {
    subject = await factory();
    codes = subject.adapters('AuthorizationCode');
    sessions = subject.adapters('Session');
  });
  afterAll(async () => { await subject?.close(); });

  describe('upsert and find', () => {
    test('find returns what upsert stored', async () => {
      const stored = payload('AuthorizationCode', { grantId: randomUUID(), scope: 'openid', extra: { nested: [1, 'two', null], flag: true } });
      await codes.upsert(stored.jti!, stored, 60);
      expect(await codes.find(stored.jti!)).toEqual(stored);
    });

    test('an unknown id is undefined', async () => {
      expect(await codes.find(randomUUID())).toBeUndefined();
    });

    test('models are separate: the same id under another model is not found', async () => {
      const stored = payload('AuthorizationCode');
      await codes.upsert(stored.jti!, stored, 60);
      expect(await subject.adapters('AccessToken').find(stored.jti!)).toBeUndefined();
    });

    test('upsert overwrites the payload and its uid index', async () => {
      const id = randomUUID();
      await sessions.upsert(id, payload('Session', { jti: id, uid: 'uid-old', accountId: 'a' }), 60);
      const replacement = payload('Session', { jti: id, uid: `uid-${randomUUID()}`, accountId: 'b' });
      await sessions.upsert(id, replacement, 60);
      expect(await sessions.find(id)).toEqual(replacement);
      expect(await sessions.findByUid(replacement.uid!)).toEqual(replacement);
    });
  });

  describe('lookups by uid and user code', () => {
    test('findByUid finds the instance holding that uid', async () => {
      const stored = payload('Session', { uid: `uid-${randomUUID()}` });
      await sessions.upsert(stored.jti!, stored, 60);
      expect(await sessions.findByUid(stored.uid!)).toEqual(stored);
      expect(await sessions.findByUid(`uid-${randomUUID()}`)).toBeUndefined();
    });

    test('findByUserCode finds the instance holding that user code', async () => {
      const devices = subject.adapters('DeviceCode');
      const stored = payload('DeviceCode', { userCode: `UC-${randomUUID()}` });
      await devices.upsert(stored.jti!, stored, 60);
      expect(await devices.findByUserCode(stored.userCode!)).toEqual(stored);
      expect(await devices.findByUserCode(`UC-${randomUUID()}`)).toBeUndefined();
    });
  });

  describe('expiry', () => {
    test('an instance is gone once expiresIn has passed, by id, uid and user code alike', async () => {
      const shortLived = payload('Session', { uid: `uid-${randomUUID()}`, userCode: `UC-${randomUUID()}` });
      const extended = payload('Session', { uid: `uid-${randomUUID()}` });
      const forever = payload('Session');
      await sessions.upsert(shortLived.jti!, shortLived, 1);
      await sessions.upsert(extended.jti!, extended, 1);
      await sessions.upsert(extended.jti!, extended, 60); // expiresIn counts from the latest upsert
      await sessions.upsert(forever.jti!, forever, NO_EXPIRY);
      expect(await sessions.find(shortLived.jti!)).toEqual(shortLived);

      await sleep(1100);

      expect(await sessions.find(shortLived.jti!)).toBeUndefined();
      expect(await sessions.findByUid(shortLived.uid!)).toBeUndefined();
      expect(await sessions.findByUserCode(shortLived.userCode!)).toBeUndefined();
      expect(await sessions.find(extended.jti!)).toEqual(extended);
      expect(await sessions.findByUid(extended.uid!)).toEqual(extended);
      expect(await sessions.find(forever.jti!)).toEqual(forever);
    });
  });

  describe('consume', () => {
    test('marks the instance consumed (epoch seconds), visible to every lookup', async () => {
      const stored = payload('AuthorizationCode', { uid: `uid-${randomUUID()}` });
      await codes.upsert(stored.jti!, stored, 60);
      const before = nowSeconds();
      await codes.consume(stored.jti!);
      const found = await codes.find(stored.jti!);
      expect(found).toEqual({ ...stored, consumed: expect.any(Number) });
      expect(found!.consumed).toBeGreaterThanOrEqual(before - 1);
      expect(found!.consumed).toBeLessThanOrEqual(nowSeconds() + 1);
      expect((await codes.findByUid(stored.uid!))?.consumed).toBe(found!.consumed);
    });

    test('a second consume throws the InvalidGrant the provider gives a used code', async () => {
      const stored = payload('AuthorizationCode');
      await codes.upsert(stored.jti!, stored, 60);
      await codes.consume(stored.jti!);
      const second = codes.consume(stored.jti!);
      await expect(second).rejects.toBeInstanceOf(errors.InvalidGrant);
      await expect(second).rejects.toMatchObject({ error: 'invalid_grant' });
    });

    test('consuming an absent id throws', async () => {
      await expect(codes.consume(randomUUID())).rejects.toThrow();
    });

    test('consume of an expired instance throws', async () => {
      const stored = payload('AuthorizationCode');
      await codes.upsert(stored.jti!, stored, 1);
      await sleep(1100);
      await expect(codes.consume(stored.jti!)).rejects.toBeInstanceOf(errors.InvalidGrant);
    });

    test('12 parallel consumes of one id: exactly one succeeds (5 rounds)', async () => {
      for (let round = 0; round < 5; round += 1) {
        const stored = payload('AuthorizationCode');
        await codes.upsert(stored.jti!, stored, 60);
        const results = await Promise.allSettled(Array.from({ length: 12 }, () => codes.consume(stored.jti!)));
        const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        for (const loser of losers) expect(loser.reason).toBeInstanceOf(errors.InvalidGrant);
      }
    });
  });

  describe('destroy', () => {
    test('removes the instance from every lookup; destroying an absent id is fine', async () => {
      const stored = payload('Session', { uid: `uid-${randomUUID()}` });
      await sessions.upsert(stored.jti!, stored, 60);
      await sessions.destroy(stored.jti!);
      expect(await sessions.find(stored.jti!)).toBeUndefined();
      expect(await sessions.findByUid(stored.uid!)).toBeUndefined();
      await expect(sessions.destroy(randomUUID())).resolves.toBeUndefined();
    });
  });

  describe('revokeByGrantId', () => {
    test("removes that grant's instances of the model and leaves other grants'", async () => {
      const tokens = subject.adapters('AccessToken');
      const revoked = randomUUID();
      const kept = randomUUID();
      const a = payload('AccessToken', { grantId: revoked });
      const b = payload('AccessToken', { grantId: revoked });
      const c = payload('AccessToken', { grantId: kept });
      const d = payload('AccessToken'); // no grant at all
      for (const p of [a, b, c]) await tokens.upsert(p.jti!, p, 60);
      await tokens.upsert(d.jti!, d, NO_EXPIRY);

      await tokens.revokeByGrantId(revoked);

      expect(await tokens.find(a.jti!)).toBeUndefined();
      expect(await tokens.find(b.jti!)).toBeUndefined();
      expect(await tokens.find(c.jti!)).toEqual(c);
      expect(await tokens.find(d.jti!)).toEqual(d);
      await expect(tokens.revokeByGrantId(randomUUID())).resolves.toBeUndefined();
    });

    test("leaves the same grant's instances of other models (the provider revokes model by model)", async () => {
      const grantId = randomUUID();
      const token = payload('AccessToken', { grantId });
      const code = payload('AuthorizationCode', { grantId });
      await subject.adapters('AccessToken').upsert(token.jti!, token, 60);
      await codes.upsert(code.jti!, code, 60);
      await subject.adapters('AccessToken').revokeByGrantId(grantId);
      expect(await codes.find(code.jti!)).toEqual(code);
    });
  });
}

const postgres = (kind: 'postgres' | 'embedded'): Factory => async () => {
  const store = await openTestDatabase(kind, { migrated: true });
  return { adapters: requestPath(store.db).adapters, close: () => store.close() };
};

const redis: Factory = async () => {
  const client = await connectRedis(REDIS_URL);
  const prefix = testRedisPrefix();
  return {
    adapters: redisAdapters(client, prefix),
    async close() {
      client.disconnect();
      await deleteRedisKeys(prefix);
    },
  };
};

const memory: Factory = async () => {
  const store = memoryAdapters();
  return { adapters: store.adapters, close: async () => store.close() };
};

describe.each<[string, Factory]>([
  ['Postgres (real server)', postgres('postgres')],
  ['Postgres (embedded PGlite)', postgres('embedded')],
  ['Redis', redis],
  ['memory', memory],
])('adapter contract: %s', (_name, factory) => adapterContract(factory));

/**
 * The short-lived stores' ReplayDetection (adapter.ts CLAIMED_ON_FIND): a find that misses claims
 * the id, atomically, so of two finds of one id (two requests with one assertion's `jti`, on two
 * instances or in one) exactly one misses; the provider's save then sets the entry's expiry.
 */
describe.each<[string, Factory]>([['Redis', redis], ['memory', memory]])('replay detection claims on find: %s', (_name, factory) => {
  let subject: Subject;
  let replays: Adapter;
  beforeAll(async () => {
    subject = await factory();
    replays = subject.adapters('ReplayDetection');
  });
  afterAll(async () => { await subject?.close(); });

  test('of 20 finds of one id at once, exactly one misses; a find after the save sees the saved payload', async () => {
    const id = randomUUID();
    const found = await Promise.all(Array.from({ length: 20 }, () => replays.find(id)));
    expect(found.filter((entry) => entry === undefined)).toHaveLength(1);
    const saved = { jti: id, iss: 'client-1', kind: 'ReplayDetection', iat: nowSeconds(), exp: nowSeconds() + 2 };
    await replays.upsert(id, saved, 2);
    expect(await replays.find(id)).toEqual(saved);
    await sleep(2100);
    expect(await replays.find(id)).toBeUndefined(); // expired with its save: missed, so claimed again
    expect(await replays.find(id)).toBeDefined();
  });

  test('other models are only read by find', async () => {
    const codes = subject.adapters('AuthorizationCode');
    const id = randomUUID();
    expect(await codes.find(id)).toBeUndefined();
    expect(await codes.find(id)).toBeUndefined();
  });
});

/** A Session adapter on Redis under a fresh key prefix, with its client; the keys are removed afterwards. */
async function withSessions(work: (sessions: Adapter, client: Awaited<ReturnType<typeof connectRedis>>, prefix: string) => Promise<void>) {
  const client = await connectRedis(REDIS_URL);
  const prefix = testRedisPrefix();
  try {
    await work(redisAdapters(client, prefix)('Session'), client, prefix);
  } finally {
    client.disconnect();
    await deleteRedisKeys(prefix);
  }
}

describe('adapter on Redis: destroy', () => {
  test('leaves no key behind: the uid and user-code indexes go with the instance (found by the soak: ended sessions kept their uid index for 14 days)', () => withSessions(async (sessions, client, prefix) => {
    const stored = payload('Session', { uid: `uid-${randomUUID()}`, userCode: `code-${randomUUID()}` });
    await sessions.upsert(stored.jti!, stored, 60);
    expect((await client.keys(`${prefix}*`)).length).toBe(3);
    await sessions.destroy(stored.jti!);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  }));

  test('in a request: what a look-up by uid found is destroyed with its indexes, from what the request read', () => withSessions(async (sessions, client, prefix) => {
    const stored = payload('Session', { uid: `uid-${randomUUID()}`, userCode: `code-${randomUUID()}` });
    await sessions.upsert(stored.jti!, stored, 60);
    await withRequestState(async () => {}, async () => {
      expect(await sessions.findByUid(stored.uid!)).toEqual(stored);
      expect(await sessions.find(stored.jti!)).toEqual(stored);
      await sessions.destroy(stored.jti!);
      expect(await sessions.findByUid(stored.uid!)).toBeUndefined();
    });
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  }));

  test('an index that names a newer instance with the same uid stays', () => withSessions(async (sessions) => {
    const uid = `uid-${randomUUID()}`;
    const old = payload('Session', { uid });
    const renewed = payload('Session', { uid }); // the provider gives a session a new id, same uid
    await sessions.upsert(old.jti!, old, 60);
    await sessions.upsert(renewed.jti!, renewed, 60);
    await sessions.destroy(old.jti!);
    expect(await sessions.findByUid(uid)).toEqual(renewed);
  }));
});
