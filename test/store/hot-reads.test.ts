/**
 * store/hot-reads.ts on a real server and on PGlite: the lookups of requests that arrive in one
 * turn go to the database as one statement, each request remembers what it read in its own
 * memo, and a lookup of something we could never have stored (NUL, a lone surrogate, too long)
 * is answered "absent" without disturbing the others.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { postgresAdapters } from '../../src/oidc/postgres-adapter.js';
import type { AdapterPayload } from '../../src/oidc/adapter.js';
import { createHotReads } from '../../src/store/hot-reads.js';
import { currentMemo, withRequestMemo } from '../../src/store/request-memo.js';
import type { HotSql } from '../../src/store/sql.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { StoreKind, TestStore } from '../helpers/databases.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe.each<StoreKind>(['postgres', 'embedded'])('hot reads (%s)', (kind) => {
  let store: TestStore;
  let statements: string[];
  let counted: HotSql;
  let user: { id: string };
  let clientId: string;
  beforeAll(async () => {
    store = await openTestDatabase(kind, { migrated: true });
    const { prisma } = store.db;
    user = await prisma.user.create({ data: { id: randomUUID(), username: `u${randomUUID().slice(0, 8)}`, email: 'u@example.com', fullName: 'U', passwordHash: 'x' } });
    clientId = `c${randomUUID().slice(0, 8)}`;
    await prisma.client.create({ data: { clientId, clientSecretHash: 'h', clientName: 'C', redirectUri: 'http://localhost/cb' } });
    statements = [];
    counted = (text, params) => {
      statements.push(text);
      return store.db.sql(text, params);
    };
  });
  afterAll(async () => { await store?.close(); });

  async function storedToken(): Promise<AdapterPayload> {
    const token: AdapterPayload = { jti: randomUUID(), kind: 'AccessToken', iat: nowSeconds(), exp: nowSeconds() + 60, accountId: user.id, clientId };
    await postgresAdapters(store.db)('AccessToken').upsert(token.jti!, token, 60);
    return token;
  }

  test('three requests looking up tokens in one turn: one statement, each request remembers its own rows', async () => {
    const tokens = await Promise.all([storedToken(), storedToken(), storedToken()]);
    const hot = createHotReads(counted);
    statements.length = 0;
    const seen = await Promise.all(tokens.map((token) => withRequestMemo(async () => {
      const row = await hot.findModel('AccessToken', token.jti!);
      return { jti: row?.payload.jti, user: (currentMemo()!.rows.get(`user:${user.id}`) as { id?: string } | null)?.id, rows: currentMemo()!.rows.size };
    })));
    expect(statements).toHaveLength(1);
    expect(seen.map((s) => s.jti)).toEqual(tokens.map((t) => t.jti));
    for (const s of seen) {
      expect(s.user).toBe(user.id);
      expect(s.rows).toBe(4); // the token, its user, its client and whether the client has webhooks
    }
  });

  test('ids that name nothing we could store are absent, and the turn\'s other lookups are answered', async () => {
    const token = await storedToken();
    const hot = createHotReads(counted);
    statements.length = 0;
    const answers = await Promise.all([
      withRequestMemo(() => hot.findModel('AccessToken', token.jti!)),
      withRequestMemo(() => hot.findModel('AccessToken', 'a\0b')),
      withRequestMemo(() => hot.findModel('AccessToken', '\ud800')),
      withRequestMemo(() => hot.findModel('AccessToken', 'x'.repeat(1025))),
      withRequestMemo(() => hot.findClient(`${clientId}\0`)),
      withRequestMemo(() => hot.findClient(clientId)),
    ]);
    expect(answers[0]?.payload.jti).toBe(token.jti);
    expect(answers.slice(1, 5)).toEqual([null, null, null, null]);
    expect((answers[5] as { clientId?: string } | null)?.clientId).toBe(clientId);
    expect(statements).toHaveLength(2); // one for the token, one for the client: the rest never went
  });
});
