/**
 * The PostgreSQL adapter inside a request (store/request-state.ts, oidc/adapter.ts): what it
 * defers and what it remembers, on a real server and on PGlite. Outside a request the plain
 * adapter contract holds (test/oidc/adapter-contract.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { errors } from 'oidc-provider';
import type { AdapterFor, AdapterPayload } from '../../src/oidc/adapter.js';
import { createHotReads } from '../../src/store/hot-reads.js';
import { currentState, outsideRequest } from '../../src/store/request-state.js';
import { outboxEvent } from '../../src/webhooks/outbox.js';
import type { WebhookEvent } from '../../src/webhooks/events.js';
import { openTestDatabase } from '../helpers/databases.js';
import { requestPath } from '../helpers/request-path.js';
import type { RequestPath } from '../helpers/request-path.js';
import type { StoreKind, TestStore } from '../helpers/databases.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const payload = (kind: string, fields: Partial<AdapterPayload> = {}): AdapterPayload =>
  ({ jti: randomUUID(), kind, iat: nowSeconds(), exp: nowSeconds() + 60, accountId: randomUUID(), clientId: 'client-1', ...fields });

describe.each<StoreKind>(['postgres', 'embedded'])('postgres adapter within a request (%s)', (kind) => {
  let store: TestStore;
  let path: RequestPath;
  let adapters: AdapterFor;
  beforeAll(async () => {
    store = await openTestDatabase(kind, { migrated: true });
    path = requestPath(store.db);
    adapters = path.adapters;
  });
  afterAll(async () => { await store?.close(); });

  /** The same adapter as another request (or none) sees it. */
  const outside = (model: string) => {
    const adapter = adapters(model);
    return {
      find: (id: string) => outsideRequest(() => adapter.find(id)),
      upsert: (id: string, value: AdapterPayload, expiresIn: number) => outsideRequest(() => adapter.upsert(id, value, expiresIn)),
      consume: (id: string) => outsideRequest(() => adapter.consume(id)),
      destroy: (id: string) => outsideRequest(() => adapter.destroy(id)),
    };
  };

  test('an access token is written with the refresh token after it, together with the consume before them', async () => {
    const grantId = randomUUID();
    const code = payload('AuthorizationCode', { grantId });
    await outside('AuthorizationCode').upsert(code.jti!, code, 60);
    const access = payload('AccessToken', { grantId });
    const refresh = payload('RefreshToken', { grantId });

    await path.inRequest(async () => {
      await adapters('AuthorizationCode').consume(code.jti!);
      await adapters('AccessToken').upsert(access.jti!, access, 60);
      // Deferred: not in the database yet (another request would not see it).
      expect(await outside('AccessToken').find(access.jti!)).toBeUndefined();
      expect((await outside('AuthorizationCode').find(code.jti!))?.consumed).toBeUndefined();
      await adapters('RefreshToken').upsert(refresh.jti!, refresh, 60);
    });
    expect(await outside('AccessToken').find(access.jti!)).toEqual(access);
    expect(await outside('RefreshToken').find(refresh.jti!)).toEqual(refresh);
    expect((await outside('AuthorizationCode').find(code.jti!))?.consumed).toEqual(expect.any(Number));
  });

  test('a code consumed meanwhile by another request: the write fails with InvalidGrant and writes nothing', async () => {
    const code = payload('AuthorizationCode');
    await outside('AuthorizationCode').upsert(code.jti!, code, 60);
    const access = payload('AccessToken');
    const refresh = payload('RefreshToken');

    const attempt = path.inRequest(async () => {
      expect((await adapters('AuthorizationCode').find(code.jti!))?.consumed).toBeUndefined();
      await outside('AuthorizationCode').consume(code.jti!); // the parallel redemption wins
      await adapters('AuthorizationCode').consume(code.jti!);
      await adapters('AccessToken').upsert(access.jti!, access, 60);
      await adapters('RefreshToken').upsert(refresh.jti!, refresh, 60);
    });
    await expect(attempt).rejects.toBeInstanceOf(errors.InvalidGrant);
    expect(await outside('AccessToken').find(access.jti!)).toBeUndefined();
    expect(await outside('RefreshToken').find(refresh.jti!)).toBeUndefined();
  });

  describe('an event\'s outbox messages join the request\'s one write statement', () => {
    let clientId: string;
    beforeAll(async () => {
      clientId = `c${randomUUID().slice(0, 8)}`;
      await store.db.prisma.client.create({ data: { clientId, clientSecretHash: 'h', clientName: 'C', redirectUri: 'http://localhost/cb' } });
      await store.db.prisma.webhookEndpoint.createMany({
        data: ['a', 'b'].map((n) => ({ id: `ep_${clientId}_${n}`, clientId, url: `https://app.example/${n}`, events: ['token.issued'], secret: 'whsec_x' })),
      });
    });
    const event = (): WebhookEvent => ({ id: `evt_${randomUUID()}`, type: 'token.issued', created_at: new Date().toISOString(), data: { client_id: clientId, client_name: 'C' } });
    const messages = (eventId: string) => store.db.prisma.webhookDelivery.count({ where: { eventId } });
    /** Adds `event` to the current request's writes; `written` gets its id once it committed with a message. */
    const announce = (event: WebhookEvent, written: string[]) => {
      const { writes } = currentState()!;
      writes.events.push(outboxEvent(event, clientId, undefined, new Date()));
      writes.committed.push((announced) => { if (announced.has(event.id)) written.push(event.id); });
    };

    test('written with the tokens, one per subscribed endpoint, and told once committed', async () => {
      const code = payload('AuthorizationCode', { clientId });
      await outside('AuthorizationCode').upsert(code.jti!, code, 60);
      const issued = event();
      const written: string[] = [];
      await path.inRequest(async () => {
        await adapters('AuthorizationCode').consume(code.jti!);
        await adapters('AccessToken').upsert(randomUUID(), payload('AccessToken', { clientId }), 60);
        announce(issued, written);
        expect(await messages(issued.id)).toBe(0); // not before the statement goes
      });
      expect(await messages(issued.id)).toBe(2);
      expect(written).toEqual([issued.id]);
    });

    test('a redemption that lost its race writes no token and no message', async () => {
      const code = payload('AuthorizationCode', { clientId });
      await outside('AuthorizationCode').upsert(code.jti!, code, 60);
      const access = payload('AccessToken', { clientId });
      const issued = event();
      const written: string[] = [];
      const attempt = path.inRequest(async () => {
        expect((await adapters('AuthorizationCode').find(code.jti!))?.consumed).toBeUndefined();
        await outside('AuthorizationCode').consume(code.jti!); // the parallel redemption wins
        await adapters('AuthorizationCode').consume(code.jti!);
        await adapters('AccessToken').upsert(access.jti!, access, 60);
        announce(issued, written);
      });
      await expect(attempt).rejects.toBeInstanceOf(errors.InvalidGrant);
      expect(await outside('AccessToken').find(access.jti!)).toBeUndefined();
      expect(await messages(issued.id)).toBe(0);
      expect(written).toEqual([]);
    });
  });

  test('any other call sends what was deferred first, so the request reads its own writes', async () => {
    const access = payload('AccessToken');
    await path.inRequest(async () => {
      await adapters('AccessToken').upsert(access.jti!, access, 60);
      expect(await adapters('AccessToken').find(access.jti!)).toEqual(access);
    });
    expect(await outside('AccessToken').find(access.jti!)).toEqual(access);
  });

  test('a grant read with its token is remembered for that request only; the next request reads afresh', async () => {
    const grant = payload('Grant');
    await outside('Grant').upsert(grant.jti!, grant, 60);
    const token = payload('AccessToken', { grantId: grant.jti! });
    await outside('AccessToken').upsert(token.jti!, token, 60);

    await path.inRequest(async () => {
      expect(await adapters('AccessToken').find(token.jti!)).toEqual(token);
      await outside('Grant').destroy(grant.jti!); // revoked elsewhere while this request runs
      expect(await adapters('Grant').find(grant.jti!)).toEqual(grant); // as read at its start
    });
    await path.inRequest(async () => {
      expect(await adapters('Grant').find(grant.jti!)).toBeUndefined();
    });
  });

  test('this request\'s own destroy is seen by its later lookups', async () => {
    const grant = payload('Grant');
    await outside('Grant').upsert(grant.jti!, grant, 60);
    await path.inRequest(async () => {
      expect(await adapters('Grant').find(grant.jti!)).toEqual(grant);
      await adapters('Grant').destroy(grant.jti!);
      expect(await adapters('Grant').find(grant.jti!)).toBeUndefined();
      await currentState()!.flush();
    });
  });

  test('users and clients read by the hot statements equal what Prisma reads', async () => {
    const { prisma } = store.db;
    const user = await prisma.user.create({ data: { id: randomUUID(), username: `u${randomUUID().slice(0, 8)}`, email: 'u@example.com', fullName: 'U Ser', passwordHash: 'x' } });
    const client = await prisma.client.create({ data: { clientId: `c${randomUUID().slice(0, 8)}`, clientSecretHash: 'h', clientName: 'C', redirectUri: 'http://localhost/cb' } });
    const token = payload('AccessToken', { accountId: user.id, clientId: client.clientId });
    await outside('AccessToken').upsert(token.jti!, token, 60);
    await path.inRequest(async () => {
      await adapters('AccessToken').find(token.jti!);
      expect(currentState()!.users.get(user.id)).toEqual(await prisma.user.findUnique({ where: { id: user.id } }));
      expect(currentState()!.clients.get(client.clientId)).toEqual(await prisma.client.findUnique({ where: { clientId: client.clientId } }));
    });
    expect(await path.inRequest(() => createHotReads(store.db.sql).findClient(client.clientId))).toEqual(client);
  });
});
