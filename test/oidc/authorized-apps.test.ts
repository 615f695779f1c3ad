/**
 * The authorized-applications store: a user's revocation of a client ends every grant the
 * user gave it, with all their tokens, in one statement, and announces what it ended in
 * the same transaction (the webhooks' `token.revoked`).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createAuthorizedApps } from '../../src/oidc/authorized-apps.js';
import type { ApplicationRevoked } from '../../src/oidc/authorized-apps.js';
import type { TestClient } from '../helpers/browser.js';
import { createUser, obtainTokens, registerClient, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('createAuthorizedApps', () => {
  let t: TestApp;
  let client: TestClient;
  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t, 'http://localhost:9999/callback', 'Calendar');
  });
  afterAll(async () => { await t.close(); });

  const accountIdOf = async (username: string) => (await t.app.db.prisma.user.findUniqueOrThrow({ where: { username } })).id;

  test('revoke ends every grant of the user to the client, deletes their rows and reports them once', async () => {
    const events: ApplicationRevoked[] = [];
    const apps = createAuthorizedApps({
      prisma: t.app.db.prisma,
      withEvents: (change) => t.app.db.prisma.$transaction((tx) => change(tx, async (event) => { events.push(event); })),
    });
    const user = await createUser(t);
    const accountId = await accountIdOf(user.username);
    const first = await obtainTokens(t, client, user);
    await obtainTokens(t, client, user);

    const { prisma } = t.app.db;
    const grants = await prisma.oidcModel.findMany({ where: { type: 'Grant' }, select: { id: true, payload: true } });
    const expected = grants.filter((g) => (g.payload as { accountId?: string }).accountId === accountId).map((g) => g.id).sort();
    expect(expected).toHaveLength(2);
    expect(await apps.list(accountId)).toEqual([
      { clientId: client.client_id, clientName: 'Calendar', scopes: ['openid'], authorizedAt: expect.any(Date) },
    ]);

    const grantIds = await apps.revoke(accountId, client.client_id);
    expect(grantIds.sort()).toEqual(expected);
    expect(events).toEqual([{ clientId: client.client_id, clientName: 'Calendar', accountId, username: user.username, grantIds }]);
    expect(await prisma.oidcModel.count({ where: { OR: [{ id: { in: expected } }, { grantId: { in: expected } }] } })).toBe(0);
    expect((await userinfo(t, `Bearer ${first.access_token}`)).status).toBe(401);
    expect(await apps.list(accountId)).toEqual([]);

    expect(await apps.revoke(accountId, client.client_id)).toEqual([]);
    expect(events).toHaveLength(1);
  });
});
