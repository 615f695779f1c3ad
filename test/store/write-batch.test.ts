/**
 * store/write-batch.ts `sendTogether`: the write batches of requests that flush in one event-loop
 * turn go to the database in one statement, each gated by its own consumes and answered with its
 * own outcome; batches that update one row never share a statement; a statement that fails on
 * one batch's data is retried batch by batch. On a real server and on PGlite.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { errors } from 'oidc-provider';
import type { AdapterFor, AdapterPayload } from '../../src/oidc/adapter.js';
import { postgresAdapters } from '../../src/oidc/postgres-adapter.js';
import { pendingWrites, withRequestMemo } from '../../src/store/request-memo.js';
import type { HotSql } from '../../src/store/sql.js';
import { sendTogether, WriteBatch } from '../../src/store/write-batch.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { StoreKind, TestStore } from '../helpers/databases.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const payload = (kind: string, fields: Partial<AdapterPayload> = {}): AdapterPayload =>
  ({ jti: randomUUID(), kind, iat: nowSeconds(), exp: nowSeconds() + 60, accountId: randomUUID(), clientId: 'client-1', ...fields });

describe.each<StoreKind>(['postgres', 'embedded'])('write batches sent together (%s)', (kind) => {
  let store: TestStore;
  let statements: string[];
  let counted: HotSql;
  let adapters: AdapterFor;
  beforeAll(async () => {
    store = await openTestDatabase(kind, { migrated: true });
    statements = [];
    counted = (text, params, options) => {
      if (/^WITH /.test(text)) statements.push(text);
      return store.db.sql(text, params, options);
    };
    adapters = postgresAdapters({ prisma: store.db.prisma, sql: counted });
  });
  afterAll(async () => { await store?.close(); });

  const code = async () => {
    const value = payload('AuthorizationCode');
    await postgresAdapters(store.db)('AuthorizationCode').upsert(value.jti!, value, 60);
    return value.jti!;
  };
  /** One request redeeming `codeId`: consume it, store an access token; resolves with the token's id. */
  const redeem = (codeId: string) => withRequestMemo(async () => {
    const access = payload('AccessToken');
    await adapters('AuthorizationCode').consume(codeId);
    await adapters('AccessToken').upsert(access.jti!, access, 60);
    return access.jti!;
  });
  const stored = async (id: string) => Boolean(await postgresAdapters(store.db)('AccessToken').find(id));

  test('three requests flushing in one turn: one statement, each written', async () => {
    const codes = await Promise.all([code(), code(), code()]);
    statements.length = 0;
    const tokens = await Promise.all(codes.map(redeem));
    expect(statements).toHaveLength(1);
    for (const token of tokens) expect(await stored(token)).toBe(true);
  });

  test('each batch is gated by its own consume: a refused one fails alone and writes nothing', async () => {
    const [fresh, used] = await Promise.all([code(), code()]);
    await postgresAdapters(store.db)('AuthorizationCode').consume(used);
    const access = payload('AccessToken');
    const results = await Promise.allSettled([
      redeem(fresh),
      withRequestMemo(async () => {
        await adapters('AuthorizationCode').consume(used);
        await adapters('AccessToken').upsert(access.jti!, access, 60);
      }),
    ]);
    expect(results[0].status).toBe('fulfilled');
    expect(await stored((results[0] as PromiseFulfilledResult<string>).value)).toBe(true);
    expect(results[1]).toMatchObject({ status: 'rejected', reason: expect.any(errors.InvalidGrant) });
    expect(await stored(access.jti!)).toBe(false);
  });

  test('parts of a kind share one CTE across batches: each batch still gated by all of its own gates, and only its own', async () => {
    const [a1, a2, c2] = await Promise.all([code(), code(), code()]);
    await postgresAdapters(store.db)('AuthorizationCode').consume(c2); // c2 is used: the third request's gate refuses
    const tokens = [payload('AccessToken'), payload('AccessToken'), payload('AccessToken')];
    const written: number[] = [];
    const audit = (n: number) => ({
      merged: {
        key: 'audit_events', columns: ['event', 'actor'],
        values: (p: (value: unknown) => string) => Array.from({ length: n }, () => [`${p('test.merged')}::text`, `${p('system')}::text`]),
        sql: (v: string, ok: string) => `INSERT INTO audit_events (event, actor) SELECT event, actor FROM ${v} WHERE ${ok} RETURNING 1`,
      },
      written: (rows: number) => { written.push(rows); },
    });
    const request = (consumes: string[], token: AdapterPayload, audited: number) => withRequestMemo(async () => {
      for (const id of consumes) await adapters('AuthorizationCode').consume(id);
      await adapters('AccessToken').upsert(token.jti!, token, 60);
      const batch = pendingWrites(counted)!;
      batch.write('audit', audit(audited));
    });
    statements.length = 0;
    const results = await Promise.allSettled([request([a1, a2], tokens[0]!, 2), request([], tokens[1]!, 1), request([c2], tokens[2]!, 3)]);
    expect(statements).toHaveLength(1);
    // One CTE for the three consumes, one for the three token upserts, one for the six audit rows.
    expect(statements[0]!.match(/UPDATE oidc_models/g)).toHaveLength(1);
    expect(statements[0]!.match(/INSERT INTO oidc_models/g)).toHaveLength(1);
    expect(statements[0]!.match(/INSERT INTO audit_events/g)).toHaveLength(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(errors.InvalidGrant);
    expect(await Promise.all(tokens.map((token) => stored(token.jti!)))).toEqual([true, true, false]);
    expect(written.sort()).toEqual([1, 2]); // the refused batch's write is told nothing
    for (const id of [a1, a2]) expect(await postgresAdapters(store.db)('AuthorizationCode').find(id)).toHaveProperty('consumed');
  });

  test('two redemptions of one code in one turn never share a statement: exactly one wins', async () => {
    const once = await code();
    statements.length = 0;
    const results = await Promise.allSettled([redeem(once), redeem(once)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(statements).toHaveLength(2);
  });

  test('a statement that fails on one batch\'s data is retried batch by batch: the others are written', async () => {
    const good = await code();
    // JSON that jsonb refuses (a lone surrogate, as a client name could carry into an outbox
    // payload): a data error, not a store failure.
    const bad = new WriteBatch();
    bad.write('broken', {
      sql: (p, ok) => `INSERT INTO audit_events (event, actor, detail) SELECT 'test', 'system', ${p('{"name":"\\ud800"}')}::jsonb WHERE ${ok} RETURNING 1`,
    });
    statements.length = 0;
    const results = await Promise.allSettled([redeem(good), sendTogether(counted, bad)]);
    expect(statements).toHaveLength(3); // together, then each alone
    expect(results[0].status).toBe('fulfilled');
    expect(await stored((results[0] as PromiseFulfilledResult<string>).value)).toBe(true);
    expect(results[1]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringMatching(/json/i) }) });
  });
});
