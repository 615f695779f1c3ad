/**
 * `clients:*` run as operators run them (DATABASE_URL) while the service runs. Deleting a client
 * ends its tokens at once; its webhook endpoints still deliver the `token.revoked` of each ended
 * grant (and what they had pending), then go; a rotated secret is printed once and the old one works for the grace
 * (CLIENT_SECRET_ROTATION_GRACE or --grace; 0: not at all), or until ended early; a redirect URI is checked as at
 * registration. Every change is audited as the operator; a bad value changes nothing.
 */
import { beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { TestClient } from '../helpers/browser.js';
import { auditLines, expectCleanFailure, expectSuccess, runCli, serviceWithCli } from '../helpers/cli.js';
import type { ServiceWithCli } from '../helpers/cli.js';
import { createUser, expectErrorResponse, obtainTokens, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { webhooksApi } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import type { TestApp } from '../helpers/test-app.js';
import { deleteRetiredEndpoints } from '../../src/store/cleanup.js';

const service = serviceWithCli({ WEBHOOK_RETRY_BASE_MS: '100' });
let t: TestApp;
let cli: ServiceWithCli['cli'];
let receiver: Receiver;
beforeAll(async () => {
  ({ t, cli, receiver } = service);
});

const operatorRows = (clientId: string) => t.app.db.prisma.auditEvent.findMany({ where: { clientId, actor: 'operator' }, orderBy: { id: 'asc' } });

test('clients:list and clients:show, as text and as JSON', async () => {
  const client = await registerClient(t, 'http://localhost:9999/callback', 'Listed App');
  const hook = await webhooksApi(t.baseUrl, client, { json: { url: receiver.url('/listed'), events: ['token.issued'] } });
  await obtainTokens(t, client, await createUser(t));
  await obtainTokens(t, client, await createUser(t));

  expect(expectSuccess(await cli(['clients:list'])).stdout).toMatch(new RegExp(`^${client.client_id}\\s+Listed App\\s+http://localhost:9999/callback\\s+\\S+\\s+1$`, 'm'));
  const all = JSON.parse(expectSuccess(await cli(['clients:list', '--json'])).stdout) as unknown[];
  expect(all).toContainEqual({
    client_id: client.client_id, client_name: 'Listed App', redirect_uri: 'http://localhost:9999/callback', created_at: expect.any(String), updated_at: expect.any(String), webhooks: 1,
  });
  const shown = JSON.parse(expectSuccess(await cli(['clients:show', client.client_id, '--json'])).stdout) as Record<string, unknown>;
  expect(shown).toMatchObject({ client_id: client.client_id, authorized_users: 2, webhooks: [{ id: hook.body.id, url: receiver.url('/listed'), events: ['token.issued'], enabled: true }] });
  expect(JSON.stringify(shown)).not.toContain(String(hook.body.secret));
  expect(expectSuccess(await cli(['clients:show', client.client_id])).stdout).toMatch(/^authorized by\s+2 users$/m);
});

test('clients:create: a client the operator vouches for, its secret printed this once (the last line), audited as the operator; bad input changes nothing', async () => {
  const created = expectSuccess(await cli(['clients:create', '--name', 'Payroll', '--redirect-uri', 'https://payroll.example/cb']));
  const secret = created.stdout.trim().split('\n').at(-1)!;
  const clientId = /created client "Payroll" \(([\w-]+)\)/.exec(created.stdout)![1]!;
  const stored = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId } });
  expect(stored).toMatchObject({ clientName: 'Payroll', redirectUri: 'https://payroll.example/cb', registration: 'operator' });
  expect(stored.clientSecretHash).not.toContain(secret);
  const hooks = await webhooksApi(t.baseUrl, { client_id: clientId, client_secret: secret });
  expect(hooks.status).toBe(200); // the secret printed is the client's
  expect((await operatorRows(clientId)).map((row) => [row.event, (row.detail as Record<string, unknown>).registration])).toEqual([['client.registered', 'operator']]);

  const asJson = JSON.parse(expectSuccess(await cli(['clients:create', '--name', 'Payroll 2', '--redirect-uri', 'https://payroll.example/cb', '--json'])).stdout) as Record<string, unknown>;
  expect(asJson).toMatchObject({ client_id: expect.any(String), client_name: 'Payroll 2', client_secret: expect.any(String) });

  // Logout URIs, in either shape: checked as redirect URIs and webhook URLs are, shown back.
  const withLogout = JSON.parse(expectSuccess(await cli(['clients:create', '--name', 'Signs Out', '--redirect-uri', 'https://payroll.example/cb',
    '--post-logout-redirect-uri', 'https://payroll.example/bye', '--backchannel-logout-uri', 'https://payroll.example/logout', '--json'])).stdout) as Record<string, unknown>;
  expect(withLogout).toMatchObject({ post_logout_redirect_uris: ['https://payroll.example/bye'], backchannel_logout_uri: 'https://payroll.example/logout' });
  const described = JSON.parse(expectSuccess(await cli(['clients:create', '--name', 'Native', '--redirect-uri', 'http://127.0.0.1/cb', '--application-type', 'native',
    '--post-logout-redirect-uri', 'http://127.0.0.1/bye', '--json'])).stdout) as Record<string, unknown>;
  expect(described).toMatchObject({ post_logout_redirect_uris: ['http://127.0.0.1/bye'] });
  const count = await t.app.db.prisma.client.count();
  expectCleanFailure(await cli(['clients:create', '--name', 'Bad', '--redirect-uri', 'http://bad.example/cb']), /redirect_uri/, 1);
  expectCleanFailure(await cli(['clients:create', '--name', 'No URI']), /missing --redirect-uri/, 2);
  expectCleanFailure(await cli(['clients:create', '--name', 'Bad', '--redirect-uri', 'https://payroll.example/cb', '--post-logout-redirect-uri', 'http://bad.example/bye']), /post_logout_redirect_uri.*https/, 1);
  expectCleanFailure(await cli(['clients:create', '--name', 'Bad', '--redirect-uri', 'https://payroll.example/cb', '--backchannel-logout-uri', 'ftp://bad.example/']), /backchannel_logout_uri/, 1);
  expectCleanFailure(await cli(['clients:create', '--name', 'Bad', '--redirect-uri', 'https://payroll.example/cb', '--backchannel-logout-uri', 'http://10.0.0.1/logout']), /backchannel_logout_uri/, 1);
  expect(await t.app.db.prisma.client.count()).toBe(count);
}, 120_000);

/** Each test runs several CLI processes (a few seconds each on a loaded machine). */
const CLI_TEST_TIMEOUT = 120_000;

describe('clients:rotate-secret and clients:end-previous-secret', () => {
  const exchange = async (client: TestClient, secret: string) => {
    const code = (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!;
    return tokenRequest(t, { code, client_id: client.client_id, client_secret: secret });
  };
  const stored = (clientId: string) => t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId } });
  let user: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => { user = await createUser(t); });

  test('the new secret once (the last line); the old one works for CLIENT_SECRET_ROTATION_GRACE (24h unless set), as clients:show says; ended early on demand', async () => {
    const client = await registerClient(t);
    const before = Date.now();
    const run = expectSuccess(await cli(['clients:rotate-secret', client.client_id]));
    const secret = run.stdout.trim().split('\n').at(-1)!;
    expect(secret).toMatch(/^[\w-]{43}$/);
    const until = /the previous one works until (\S+)\. Shown this once:$/m.exec(run.stdout)?.[1];
    expect(Date.parse(until!) - before).toBeGreaterThanOrEqual(24 * 3_600_000);
    expect(Date.parse(until!) - Date.now()).toBeLessThanOrEqual(24 * 3_600_000 + 1000);
    expect((await exchange(client, client.client_secret)).status).toBe(200);
    expect((await exchange(client, secret)).status).toBe(200);

    const shown = JSON.parse(expectSuccess(await cli(['clients:show', client.client_id, '--json'])).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ previous_secret_expires_at: until, previous_secret_works: true });
    expect(expectSuccess(await cli(['clients:show', client.client_id])).stdout).toMatch(new RegExp(`^previous secret\\s+works until ${until}$`, 'm'));

    const ended = expectSuccess(await cli(['clients:end-previous-secret', client.client_id]));
    expect(ended.stdout.trim()).toBe(`the previous client_secret of "Test App" (${client.client_id}) no longer works`);
    expectErrorResponse(await exchange(client, client.client_secret), 401, 'invalid_client');
    expect((await exchange(client, secret)).status).toBe(200);
    expect(expectSuccess(await cli(['clients:show', client.client_id])).stdout).toMatch(/^previous secret\s+stopped working at \S+$/m);
    expect(expectSuccess(await cli(['clients:end-previous-secret', client.client_id])).stdout).toMatch('has no previous client_secret that still works: nothing to end');

    const rows = await operatorRows(client.client_id);
    expect(rows.map((row) => [row.event, row.detail])).toEqual([
      ['client.secret_rotated', expect.objectContaining({ client_name: 'Test App', grace: '1d', previous_secret_expires_at: until })],
      ['client.previous_secret_ended', expect.objectContaining({ client_name: 'Test App', was_to_expire_at: until })],
    ]);
    expect(JSON.stringify(rows.map((row) => row.detail)) + run.stderr).not.toContain(secret);
  }, CLI_TEST_TIMEOUT);

  test('--grace 0 refuses the old secret at once; --grace 5s keeps it 5 seconds; the variable sets the default; --json', async () => {
    const client = await registerClient(t);
    const zero = JSON.parse(expectSuccess(await cli(['clients:rotate-secret', client.client_id, '--grace', '0', '--json'])).stdout) as Record<string, string>;
    expect(zero).toEqual({ client_id: client.client_id, client_secret: expect.stringMatching(/^[\w-]{43}$/), previous_secret_expires_at: expect.any(String) });
    expectErrorResponse(await exchange(client, client.client_secret), 401, 'invalid_client');
    expect((await exchange(client, zero.client_secret!)).status).toBe(200);

    const code = (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!; // taken first: in the grace, one request
    const short = JSON.parse(expectSuccess(await cli(['clients:rotate-secret', client.client_id, '--grace=5s', '--json'])).stdout) as Record<string, string>;
    const until = Date.parse(short.previous_secret_expires_at!);
    expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: zero.client_secret! })).status).toBe(200); // the previous one, in its grace
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - Date.now()) + 50));
    expectErrorResponse(await exchange(client, zero.client_secret!), 401, 'invalid_client');
    expect((await exchange(client, short.client_secret!)).status).toBe(200);

    const env = { DATABASE_URL: t.env.DATABASE_URL!, DATA_DIR: t.env.DATA_DIR! };
    const before = Date.now();
    const configured = JSON.parse(expectSuccess(await runCli(['clients:rotate-secret', client.client_id, '--json'], { ...env, CLIENT_SECRET_ROTATION_GRACE: '90m' })).stdout) as Record<string, string>;
    expect(Date.parse(configured.previous_secret_expires_at!) - before).toBeGreaterThanOrEqual(90 * 60_000);
    expect(Date.parse(configured.previous_secret_expires_at!) - Date.now()).toBeLessThanOrEqual(90 * 60_000 + 1000);
    expect((await operatorRows(client.client_id)).map((row) => (row.detail as Record<string, unknown>).grace)).toEqual(['0', '5s', '90m']);
  }, CLI_TEST_TIMEOUT);

  test('a grace that is not a duration, a missing value, a bad variable, a deleted client: clean failures, nothing changed', async () => {
    const client = await registerClient(t);
    const unchanged = await stored(client.client_id);
    expectCleanFailure(await cli(['clients:rotate-secret', client.client_id, '--grace', 'forever']), 'clients:rotate-secret: --grace must be a duration such as 0, 30s, 15m, 1h or 7d (at most 30d), got "forever"', 1);
    expectCleanFailure(await cli(['clients:rotate-secret', client.client_id, '--grace', '15']), /--grace must be a duration/, 1);
    expectCleanFailure(await cli(['clients:rotate-secret', client.client_id, '--grace']), /--grace needs a value/, 2);
    const env = { DATABASE_URL: t.env.DATABASE_URL!, DATA_DIR: t.env.DATA_DIR! };
    expectCleanFailure(await runCli(['clients:rotate-secret', client.client_id], { ...env, CLIENT_SECRET_ROTATION_GRACE: 'a day' }), /CLIENT_SECRET_ROTATION_GRACE: must be a duration/, 1);
    expect(await stored(client.client_id)).toEqual(unchanged);
    expect(await operatorRows(client.client_id)).toEqual([]);
    expect((await exchange(client, client.client_secret)).status).toBe(200);

    expectSuccess(await cli(['clients:delete', client.client_id]));
    expectCleanFailure(await cli(['clients:rotate-secret', client.client_id, '--grace', '1h']), `no client "${client.client_id}" (name a client by its client_id)`, 1);
    expectCleanFailure(await cli(['clients:end-previous-secret', client.client_id]), `no client "${client.client_id}"`, 1);
    expectCleanFailure(await cli(['clients:end-previous-secret']), /missing <client_id>/, 2);
    expect((await operatorRows(client.client_id)).map((row) => row.event)).toEqual(['token.revoked', 'client.deleted']); // the deletion's alone
  }, CLI_TEST_TIMEOUT);
});

test('clients:set-redirect-uri: checked as at registration; the authorization endpoint takes the new one at once', async () => {
  const client = await registerClient(t);
  const user = await createUser(t);
  expectCleanFailure(await cli(['clients:set-redirect-uri', client.client_id, 'http://evil.example/cb']), /redirect_uri must use https/, 1);
  const changed = expectSuccess(await cli(['clients:set-redirect-uri', client.client_id, 'http://localhost:9999/moved']));
  expect(changed.stdout).toMatch('is now http://localhost:9999/moved');
  expect(expectSuccess(await cli(['clients:set-redirect-uri', client.client_id, 'http://localhost:9999/moved'])).stdout).toMatch('already');
  const moved = await new Browser(t.baseUrl).authorize({ ...client, redirect_uri: 'http://localhost:9999/moved' }, user);
  expect(moved.searchParams.get('code')).toBeTruthy();
  expect((await operatorRows(client.client_id)).map((row) => [row.event, row.detail])).toEqual([
    ['client.updated', expect.objectContaining({ redirect_uri: 'http://localhost:9999/moved', changed: ['redirect_uri'] })],
  ]);
});

describe('clients:delete', () => {
  let client: TestClient;
  test('ends every user\'s tokens at once; its receiver still gets a token.revoked per grant and what was pending, then the endpoint goes; audit rows stay', async () => {
    client = await registerClient(t, 'http://localhost:9999/callback', 'Doomed');
    const hook = await webhooksApi(t.baseUrl, client, { json: { url: receiver.url('/doomed'), events: ['token.revoked', 'token.issued'] } });
    const endpointId = String(hook.body.id);
    receiver.respond = (hit) => (hit.path === '/doomed' ? 503 : 200); // its deliveries stay pending
    const [alice, bob] = [await createUser(t), await createUser(t)];
    const tokens = [await obtainTokens(t, client, alice), await obtainTokens(t, client, bob)];
    const other = await registerClient(t);
    const kept = await obtainTokens(t, other, alice);

    const run = expectSuccess(await cli(['clients:delete', client.client_id]));
    expect(run.stdout).toMatch(`deleted client "Doomed" (${client.client_id}); ended 2 grants (`);
    for (const token of tokens) expect((await userinfo(t, `Bearer ${token.access_token}`)).status).toBe(401);
    expect((await userinfo(t, `Bearer ${kept.access_token}`)).status).toBe(200);
    const authorize = await new Browser(t.baseUrl).follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
    expect(authorize.status).toBe(401);
    expectErrorResponse(await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: tokens[0]!.refresh_token, client_id: client.client_id, client_secret: client.client_secret }), 401, 'invalid_client');

    // The endpoint outlives its client (no client, listed nowhere) while it has deliveries pending:
    // one token.revoked per ended grant, written with the deletion, and the token.issued retries.
    const endpoint = await t.app.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpointId } });
    expect(endpoint.clientId).toBeNull();
    const pending = await t.app.db.prisma.webhookDelivery.findMany({ where: { endpointId, status: 'pending' } });
    expect(pending.map((row) => row.eventType).sort()).toEqual(['token.issued', 'token.issued', 'token.revoked', 'token.revoked']);
    expect(await deleteRetiredEndpoints(t.app.db.prisma)).toBe(0); // not while anything is pending

    receiver.respond = () => 200;
    const revoked = [
      await receiver.next((hit) => hit.path === '/doomed' && hit.event.type === 'token.revoked' && hit.event.data.username === alice.username, 10_000),
      await receiver.next((hit) => hit.path === '/doomed' && hit.event.type === 'token.revoked' && hit.event.data.username === bob.username, 10_000),
    ];
    for (const hit of revoked) {
      expect(hit.event.data).toMatchObject({ client_id: client.client_id, client_name: 'Doomed', token_type: 'grant', reason: 'admin_revoked', grant_id: expect.any(String) });
    }
    for (let i = 0; i < 100 && await t.app.db.prisma.webhookDelivery.count({ where: { endpointId, status: 'pending' } }); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await t.app.db.prisma.webhookDelivery.count({ where: { endpointId, status: 'delivered' } })).toBe(4);
    // Nothing left to send: the cleanup job removes the endpoint and its delivery log.
    expect(await deleteRetiredEndpoints(t.app.db.prisma)).toBe(4 + 1); // its four deliveries, then it
    expect(await t.app.db.prisma.webhookEndpoint.count({ where: { id: endpointId } })).toBe(0);
    expect(await t.app.db.prisma.webhookDelivery.count({ where: { endpointId } })).toBe(0);

    const rows = await operatorRows(client.client_id);
    expect(rows.map((row) => [row.event, row.userId])).toEqual(expect.arrayContaining([['client.deleted', null]]));
    expect(rows.filter((row) => row.event === 'token.revoked')).toHaveLength(2);
    expect(rows.at(-1)).toMatchObject({ event: 'client.deleted', detail: { client_name: 'Doomed', grants_revoked: 2 } });
    expect(auditLines(run)).toHaveLength(3);
    expect(await t.app.db.prisma.auditEvent.count({ where: { clientId: client.client_id, event: 'client.registered' } })).toBe(1);
  });

  test('an unknown or deleted client_id is refused plainly', async () => {
    expectCleanFailure(await cli(['clients:delete', client.client_id]), `no client "${client.client_id}" (name a client by its client_id)`, 1);
    expectCleanFailure(await cli(['clients:show', 'no-such-client']), 'no client "no-such-client"', 1);
    expectCleanFailure(await cli(['clients:set-redirect-uri', 'x']), /missing <redirect_uri>/, 2);
    expectCleanFailure(await cli(['clients:rotate-secret']), /missing <client_id>/, 2);
  });
});
