/**
 * store/write-sender.ts: each request's deferred writes go out as one statement (store/statements.ts
 * `WRITE`), gated by the request's own consumes; with turn batching, the writes of requests that
 * send in one event-loop turn share a statement, each answered with its own outcome; writes that
 * update one row never share a statement; a statement that fails on one batch's data is retried
 * batch by batch, and each retry is counted by its SQLSTATE. On a real server and on PGlite.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { errors } from 'oidc-provider';
import type { AdapterPayload } from '../../src/oidc/adapter.js';
import { currentState, Writes } from '../../src/store/request-state.js';
import type { HotSql } from '../../src/store/sql.js';
import { WRITE } from '../../src/store/statements.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { StoreKind, TestStore } from '../helpers/databases.js';
import { requestPath } from '../helpers/request-path.js';
import type { RequestPath } from '../helpers/request-path.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const payload = (kind: string, fields: Partial<AdapterPayload> = {}): AdapterPayload =>
  ({ jti: randomUUID(), kind, iat: nowSeconds(), exp: nowSeconds() + 60, accountId: randomUUID(), clientId: 'client-1', ...fields });

describe.each<StoreKind>(['postgres', 'embedded'])('write statements (%s)', (kind) => {
  let store: TestStore;
  let statements: string[];
  let counted: HotSql;
  let plain: RequestPath;
  beforeAll(async () => {
    store = await openTestDatabase(kind, { migrated: true });
    statements = [];
    counted = (query) => {
      if (query.text === WRITE.text) statements.push(query.text);
      return store.db.sql(query);
    };
    plain = requestPath(store.db);
  });
  afterAll(async () => { await store?.close(); });

  const code = async () => {
    const value = payload('AuthorizationCode');
    await plain.adapters('AuthorizationCode').upsert(value.jti!, value, 60);
    return value.jti!;
  };
  const stored = async (id: string) => Boolean(await plain.adapters('AccessToken').find(id));
  /** One request on `path` redeeming `codeId`: consume it, store an access token; resolves with the token's id. */
  const redeem = (path: RequestPath, codeId: string) => path.inRequest(async () => {
    const access = payload('AccessToken');
    await path.adapters('AuthorizationCode').consume(codeId);
    await path.adapters('AccessToken').upsert(access.jti!, access, 60);
    return access.jti!;
  });

  describe('each request alone', () => {
    test('three requests: three statements, each written', async () => {
      const alone = requestPath(store.db, { sql: counted });
      const codes = await Promise.all([code(), code(), code()]);
      statements.length = 0;
      const tokens = await Promise.all(codes.map((id) => redeem(alone, id)));
      expect(statements).toHaveLength(3);
      for (const token of tokens) expect(await stored(token)).toBe(true);
    });

    test('a consume that did not take fails its request, which writes nothing', async () => {
      const alone = requestPath(store.db, { sql: counted });
      const used = await code();
      await plain.adapters('AuthorizationCode').consume(used);
      const access = payload('AccessToken');
      const attempt = alone.inRequest(async () => {
        await alone.adapters('AuthorizationCode').consume(used);
        await alone.adapters('AccessToken').upsert(access.jti!, access, 60);
      });
      await expect(attempt).rejects.toBeInstanceOf(errors.InvalidGrant);
      expect(await stored(access.jti!)).toBe(false);
    });
  });

  describe('by turn', () => {
    let byTurn: RequestPath;
    let retries: string[];
    beforeAll(() => {
      retries = [];
      byTurn = requestPath(store.db, { sql: counted, byTurn: true, retried: (sqlState) => retries.push(sqlState) });
    });

    test('three requests sending in one turn: one statement, each written', async () => {
      const codes = await Promise.all([code(), code(), code()]);
      statements.length = 0;
      retries.length = 0;
      const tokens = await Promise.all(codes.map((id) => redeem(byTurn, id)));
      expect(statements).toHaveLength(1);
      for (const token of tokens) expect(await stored(token)).toBe(true);
      expect(retries).toEqual([]);
    });

    test('each request is gated by its own consume: a refused one fails alone and writes nothing', async () => {
      const [fresh, used] = await Promise.all([code(), code()]);
      await plain.adapters('AuthorizationCode').consume(used);
      const access = payload('AccessToken');
      const results = await Promise.allSettled([
        redeem(byTurn, fresh),
        byTurn.inRequest(async () => {
          await byTurn.adapters('AuthorizationCode').consume(used);
          await byTurn.adapters('AccessToken').upsert(access.jti!, access, 60);
        }),
      ]);
      expect(results[0].status).toBe('fulfilled');
      expect(await stored((results[0] as PromiseFulfilledResult<string>).value)).toBe(true);
      expect(results[1]).toMatchObject({ status: 'rejected', reason: expect.any(errors.InvalidGrant) });
      expect(await stored(access.jti!)).toBe(false);
    });

    test('in one statement each request is gated by all of its own consumes, and only its own; a refused one is told nothing', async () => {
      const [a1, a2, c2] = await Promise.all([code(), code(), code()]);
      await plain.adapters('AuthorizationCode').consume(c2); // c2 is used: the third request's consume refuses
      const tokens = [payload('AccessToken'), payload('AccessToken'), payload('AccessToken')];
      const committed: number[] = [];
      const request = (consumes: string[], token: AdapterPayload, audited: number) => byTurn.inRequest(async () => {
        for (const id of consumes) await byTurn.adapters('AuthorizationCode').consume(id);
        await byTurn.adapters('AccessToken').upsert(token.jti!, token, 60);
        const { writes } = currentState()!;
        for (let i = 0; i < audited; i += 1) writes.audit.push({ event: 'test.merged', actor: 'system', user_id: null, client_id: null, address: null, request_id: null, detail: {} });
        writes.committed.push(() => committed.push(audited));
      });
      statements.length = 0;
      const results = await Promise.allSettled([request([a1, a2], tokens[0]!, 2), request([], tokens[1]!, 1), request([c2], tokens[2]!, 3)]);
      expect(statements).toHaveLength(1);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(errors.InvalidGrant);
      expect(await Promise.all(tokens.map((token) => stored(token.jti!)))).toEqual([true, true, false]);
      expect(committed.sort()).toEqual([1, 2]);
      expect(await store.db.prisma.auditEvent.count({ where: { event: 'test.merged' } })).toBe(3);
      for (const id of [a1, a2]) expect(await plain.adapters('AuthorizationCode').find(id)).toHaveProperty('consumed');
    });

    test('two redemptions of one code in one turn never share a statement: exactly one wins', async () => {
      const once = await code();
      statements.length = 0;
      const results = await Promise.allSettled([redeem(byTurn, once), redeem(byTurn, once)]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect(statements).toHaveLength(2);
    });

    test('a statement that fails on one request\'s data is retried request by request: the others are written', async () => {
      const good = await code();
      // JSON that jsonb refuses (a lone surrogate, as a client name could carry into a payload): a data error, not a store failure.
      const bad = new Writes();
      bad.audit.push({ event: 'test.broken', actor: 'system', user_id: null, client_id: null, address: null, request_id: null, detail: { name: '\ud800' } });
      statements.length = 0;
      retries.length = 0;
      const results = await Promise.allSettled([redeem(byTurn, good), byTurn.send(bad)]);
      expect(statements).toHaveLength(3); // together, then each alone
      expect(retries).toEqual([expect.stringMatching(/^22[0-9A-Z]{3}$/)]); // counted once, by its SQLSTATE (class 22: data exception)
      expect(results[0].status).toBe('fulfilled');
      expect(await stored((results[0] as PromiseFulfilledResult<string>).value)).toBe(true);
      expect(results[1]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringMatching(/json|unicode|surrogate/i) }) });
    });
  });
});
