/**
 * store/hot-reads.ts on a real server and on PGlite: with turn batching, the lookups of requests
 * that arrive in one turn go to the database as one statement; each request remembers what it
 * read in its own state; a lookup of something we could never have stored (NUL, a lone
 * surrogate, too long) is answered "absent" without disturbing the others; without turn batching
 * each request's lookup is a statement of its own.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { AdapterPayload } from '../../src/oidc/adapter.js';
import { createHotReads } from '../../src/store/hot-reads.js';
import { currentState } from '../../src/store/request-state.js';
import type { HotSql } from '../../src/store/sql.js';
import { openTestDatabase } from '../helpers/databases.js';
import { requestPath } from '../helpers/request-path.js';
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
    counted = (query) => {
      statements.push(query.text);
      return store.db.sql(query);
    };
  });
  afterAll(async () => { await store?.close(); });

  async function storedToken(): Promise<AdapterPayload> {
    const token: AdapterPayload = { jti: randomUUID(), kind: 'AccessToken', iat: nowSeconds(), exp: nowSeconds() + 60, accountId: user.id, clientId };
    await requestPath(store.db).adapters('AccessToken').upsert(token.jti!, token, 60);
    return token;
  }

  const inRequest = <T>(work: () => Promise<T>) => requestPath(store.db).inRequest(work);
  /** What the current request remembers: rows of every kind, and the clients' webhook flags. */
  const remembered = () => {
    const state = currentState()!;
    return state.models.size + state.users.size + state.clients.size + state.clientHasWebhooks.size;
  };

  test('three requests looking up tokens in one turn: one statement, each request remembers its own rows', async () => {
    const tokens = await Promise.all([storedToken(), storedToken(), storedToken()]);
    const hot = createHotReads(counted, { byTurn: true });
    statements.length = 0;
    const seen = await Promise.all(tokens.map((token) => inRequest(async () => {
      const row = await hot.findModel('AccessToken', token.jti!);
      return { jti: row?.payload.jti, user: currentState()!.users.get(user.id)?.id, rows: remembered() };
    })));
    expect(statements).toHaveLength(1);
    expect(seen.map((s) => s.jti)).toEqual(tokens.map((t) => t.jti));
    for (const s of seen) {
      expect(s.user).toBe(user.id);
      expect(s.rows).toBe(4); // the token, its user, its client and whether the client has webhooks
    }
  });

  test('without turn batching, each request\'s lookup is a statement of its own', async () => {
    const tokens = await Promise.all([storedToken(), storedToken(), storedToken()]);
    const hot = createHotReads(counted);
    statements.length = 0;
    const seen = await Promise.all(tokens.map((token) => inRequest(async () => (await hot.findModel('AccessToken', token.jti!))?.payload.jti)));
    expect(statements).toHaveLength(3);
    expect(seen).toEqual(tokens.map((t) => t.jti));
  });

  test('ids that name nothing we could store are absent, and the turn\'s other lookups are answered', async () => {
    const token = await storedToken();
    const hot = createHotReads(counted, { byTurn: true });
    statements.length = 0;
    const answers = await Promise.all([
      inRequest(() => hot.findModel('AccessToken', token.jti!)),
      inRequest(() => hot.findModel('AccessToken', 'a\0b')),
      inRequest(() => hot.findModel('AccessToken', '\ud800')),
      inRequest(() => hot.findModel('AccessToken', 'x'.repeat(1025))),
      inRequest(() => hot.findClient(`${clientId}\0`)),
      inRequest(() => hot.findClient(clientId)),
    ]);
    expect(answers[0]?.payload.jti).toBe(token.jti);
    expect(answers.slice(1, 5)).toEqual([null, null, null, null]);
    expect((answers[5] as { clientId?: string } | null)?.clientId).toBe(clientId);
    expect(statements).toHaveLength(2); // one for the token, one for the client: the rest never went
  });
});
