/**
 * `tokens:revoke` against the running service (DATABASE_URL): a user's, a client's, or one
 * user's grants to one client end at once (userinfo 401 on the very next request, refresh
 * refused), a subscribed client hears `token.revoked` (`admin_revoked`) per grant, and the operator's
 * revocation is audited.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, test } from '@jest/globals';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { expectCleanFailure, expectSuccess, runCli, serviceWithCli } from '../helpers/cli.js';
import type { ServiceWithCli } from '../helpers/cli.js';
import { createUser, expectErrorResponse, obtainTokens, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { webhooksApi } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import type { TestApp } from '../helpers/test-app.js';

const service = serviceWithCli();
let t: TestApp;
let cli: ServiceWithCli['cli'];
let receiver: Receiver;
beforeAll(async () => {
  ({ t, cli, receiver } = service);
});

type Tokens = Awaited<ReturnType<typeof obtainTokens>>;
const alive = async (tokens: Tokens) => (await userinfo(t, `Bearer ${tokens.access_token}`)).status === 200;

/** Two clients (the first subscribed to token.revoked), two users, a grant of each user to each client. */
async function setUp() {
  const clients = [await registerClient(t, 'http://localhost:9999/callback', 'Mail'), await registerClient(t, 'http://localhost:9998/callback', 'Maps')];
  const path = `/${clients[0]!.client_id}`;
  expect((await webhooksApi(t.baseUrl, clients[0]!, { json: { url: receiver.url(path), events: ['token.revoked'] } })).status).toBe(201);
  const users = [await createUser(t), await createUser(t)];
  const tokens = new Map<string, Tokens>();
  for (const user of users) for (const client of clients) tokens.set(`${user.username} ${client.client_name}`, await obtainTokens(t, client, user));
  const of = (user: TestUser, client: TestClient & { client_name: string }) => tokens.get(`${user.username} ${client.client_name}`)!;
  return { clients, users, of, path };
}

describe('tokens:revoke', () => {
  test('--user: every grant of that user, at once; the subscribed client told; audited per client', async () => {
    const { clients: [mail, maps], users: [alice, bob], of, path } = await setUp();
    const run = expectSuccess(await cli(['tokens:revoke', '--user', alice!.username]));
    expect(run.stdout).toMatch(/^ended 2 grants \(/);
    expect(await alive(of(alice!, mail!))).toBe(false);
    expect(await alive(of(alice!, maps!))).toBe(false);
    expect(await alive(of(bob!, mail!))).toBe(true);
    expectErrorResponse(await tokenRequest(t, {
      grant_type: 'refresh_token', refresh_token: of(alice!, mail!).refresh_token, client_id: mail!.client_id, client_secret: mail!.client_secret,
    }), 400, 'invalid_grant');

    const hit = await receiver.next((h) => h.path === path && h.event.data.username === alice!.username);
    expect(hit.event).toMatchObject({ type: 'token.revoked', data: { client_id: mail!.client_id, client_name: 'Mail', token_type: 'grant', reason: 'admin_revoked' } });
    const rows = await t.app.db.prisma.auditEvent.findMany({ where: { event: 'token.revoked', actor: 'operator', detail: { path: ['username'], equals: alice!.username } } });
    expect(rows.map((row) => row.clientId).sort()).toEqual([mail!.client_id, maps!.client_id].sort());
  });

  test('--client: every user\'s grants to that client; --user and --client: that user\'s grants to that client only', async () => {
    const { clients: [mail, maps], users: [alice, bob], of } = await setUp();
    const json = JSON.parse(expectSuccess(await cli(['tokens:revoke', '--client', maps!.client_id, '--json'])).stdout) as Record<string, unknown>[];
    expect(json).toHaveLength(2);
    expect(json).toContainEqual({ user_id: expect.any(String), username: alice!.username, client_id: maps!.client_id, grants: 1 });
    expect(await alive(of(alice!, maps!))).toBe(false);
    expect(await alive(of(bob!, maps!))).toBe(false);
    expect(await alive(of(alice!, mail!))).toBe(true);

    expect(expectSuccess(await cli(['tokens:revoke', '--user', bob!.username, '--client', mail!.client_id])).stdout).toBe(`ended 1 grant (${bob!.username} → Mail: 1)\n`);
    expect(await alive(of(bob!, mail!))).toBe(false);
    expect(await alive(of(alice!, mail!))).toBe(true);
    expect(expectSuccess(await cli(['tokens:revoke', '--user', bob!.username])).stdout).toBe('no grants to end\n');
  });

  test('an empty --user or --client (an unset shell variable) is refused: nothing ends', async () => {
    const { clients: [mail, maps], users: [alice, bob], of } = await setUp();
    expectCleanFailure(await cli(['tokens:revoke', '--user', alice!.username, '--client', '']), '--client needs a value', 2);
    expectCleanFailure(await cli(['tokens:revoke', '--user', '', '--client', maps!.client_id]), '--user needs a value', 2);
    expectCleanFailure(await cli(['tokens:revoke', '--user', alice!.username, '--user', bob!.username]), '--user is given more than once', 2);
    for (const user of [alice!, bob!]) for (const client of [mail!, maps!]) expect(await alive(of(user, client))).toBe(true);
  });

  test('a client with thousands of grants: all end in one transaction, given its time (ADMIN_TRANSACTION_TIMEOUT_MS); out of time, nothing changes', async () => {
    const client = await registerClient(t, 'http://localhost:9999/callback', 'Popular');
    expect((await webhooksApi(t.baseUrl, client, { json: { url: receiver.url('/popular'), events: ['token.revoked'] } })).status).toBe(201);
    const { prisma } = t.app.db;
    // Grants as code exchanges leave them (one user each, with an access token), written directly: thousands of logins would take minutes.
    const grants = Array.from({ length: 2000 }, () => ({ type: 'Grant', id: randomUUID(), payload: { accountId: randomUUID(), clientId: client.client_id } }));
    await prisma.oidcModel.createMany({ data: grants });
    await prisma.oidcModel.createMany({ data: grants.map((grant) => ({ type: 'AccessToken', id: randomUUID(), payload: {}, grantId: grant.id })) });
    const count = () => prisma.oidcModel.count({ where: { OR: [{ id: { in: grants.map((g) => g.id) } }, { grantId: { in: grants.map((g) => g.id) } }] } });
    const env = { DATABASE_URL: t.env.DATABASE_URL!, DATA_DIR: t.env.DATA_DIR! };

    const short = await runCli(['tokens:revoke', '--client', client.client_id], { ...env, ADMIN_TRANSACTION_TIMEOUT_MS: '1000' });
    expectCleanFailure(short, /the change was rolled back, nothing changed \(ADMIN_TRANSACTION_TIMEOUT_MS is 1000 ms\)/, 1);
    expect(await count()).toBe(4000);
    expect(await prisma.auditEvent.count({ where: { clientId: client.client_id, event: 'token.revoked' } })).toBe(0);
    expect(await prisma.webhookDelivery.count({ where: { eventType: 'token.revoked', endpoint: { clientId: client.client_id } } })).toBe(0);

    expect(expectSuccess(await cli(['tokens:revoke', '--client', client.client_id])).stdout).toMatch(/^ended 2000 grants /);
    expect(await count()).toBe(0);
    expect(await prisma.auditEvent.count({ where: { clientId: client.client_id, event: 'token.revoked' } })).toBe(2000);
    expect(await prisma.webhookDelivery.count({ where: { eventType: 'token.revoked', endpoint: { clientId: client.client_id } } })).toBe(2000);
  }, 120_000);

  test.each<[string, string[], string | RegExp, number]>([
    ['neither --user nor --client', ['tokens:revoke'], 'missing --user <user> or --client <client_id>', 2],
    ['an unknown user', ['tokens:revoke', '--user', 'nobody-here'], 'no user "nobody-here"', 1],
    ['an unknown client', ['tokens:revoke', '--client', 'no-such-client'], 'no client "no-such-client"', 1],
    ['--user without its value', ['tokens:revoke', '--user'], /--user/, 2],
    ['a positional argument', ['tokens:revoke', 'alice'], 'unexpected argument "alice"', 2],
  ])('%s: a clear message, the exit code, no stack', async (_, args, message, code) => {
    expectCleanFailure(await cli(args), message, code);
  });
});
