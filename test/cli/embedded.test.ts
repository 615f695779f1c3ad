/**
 * The administration CLI on the embedded database (no DATABASE_URL): the service is stopped, the
 * CLI works on its DATA_DIR, and the service started again sees every change: a disabled user
 * cannot log in and their token is dead, a new user can, a secret rotated with no grace is the
 * only one that works, and the audit trail holds the operator's rows.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { APPLICATIONS_PATH, postApplicationsForm } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { EMBEDDED_TIMEOUT, expectCleanFailure, expectSuccess, runCli } from '../helpers/cli.js';
import { createUser, expectErrorResponse, obtainTokens, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
let alice: TestUser;
let client: TestClient;
let accessToken: string;
beforeAll(async () => {
  t = await startTestApp({ mode: 'embedded' });
  alice = await createUser(t);
  client = await registerClient(t);
  accessToken = (await obtainTokens(t, client, alice)).access_token;
}, EMBEDDED_TIMEOUT);
afterAll(async () => { await t?.close(); });

const cli = (args: string[], input?: string) => runCli(args, { DATA_DIR: t.env.DATA_DIR! }, { input });

test('while the service holds DATA_DIR the CLI refuses plainly; stopped, the CLI changes what the restarted service sees', async () => {
  // Carol signs in on the applications page: a signed cookie, which outlives a restart.
  const carol = await createUser(t);
  const carols = new Browser(t.baseUrl);
  expect((await postApplicationsForm(carols, 'sign_in', { username: carol.username, password: carol.password })).status).toBe(303);
  expectCleanFailure(await cli(['users:disable', alice.username]), /in use by process \d+/, 1);
  await t.close({ keepData: true });

  expect(JSON.parse(expectSuccess(await cli(['users:list', '--json'])).stdout)).toContainEqual(expect.objectContaining({ username: alice.username, disabled_at: null }));
  expect(expectSuccess(await cli(['users:disable', alice.username])).stdout).toMatch(/^disabled user .* and ended their sessions; ended 1 grant/);
  expectSuccess(await cli(['user:create', '--username', 'bob', '--email', 'bob@example.com', '--full-name', 'Bob', '--password-stdin'], 'bob password 123\n'));
  const rotated = JSON.parse(expectSuccess(await cli(['clients:rotate-secret', client.client_id, '--grace', '0', '--json'])).stdout) as { client_secret: string };
  expectSuccess(await cli(['users:sign-out', carol.username]));
  const trail = JSON.parse(expectSuccess(await cli(['audit:list', '--json', '--limit', '8'])).stdout) as { event: string; actor: string }[];
  // Newest first. Bob's verification mail is queued (embedded: mails go to the log); Alice's sessions
  // end with what they made (session.ended); Carol had only the applications page's sign-in.
  expect(trail.map((entry) => [entry.event, entry.actor])).toEqual([
    ['user.signed_out', 'operator'], ['client.secret_rotated', 'operator'], ['user.email_verification_requested', 'operator'], ['user.created', 'operator'],
    ['session.ended', 'operator'], ['user.signed_out', 'operator'], ['user.disabled', 'operator'], ['token.revoked', 'operator'],
  ]);

  t = await startTestApp({ mode: 'embedded', reuse: t.env });
  expect((await userinfo(t, `Bearer ${accessToken}`)).status).toBe(401);
  expect((await carols.request(APPLICATIONS_PATH)).body).toContain('name="password"'); // signed out by users:sign-out
  const browser = new Browser(t.baseUrl);
  const page = await browser.follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
  const refused = await browser.submit(page, '/login', { username: alice.username, password: alice.password });
  expect(refused.status).toBe(401);
  expect(refused.body).toContain('Incorrect username or password.');
  const code = (await new Browser(t.baseUrl).authorize(client, { username: 'bob', password: 'bob password 123' })).searchParams.get('code')!;
  expectErrorResponse(await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret }), 401, 'invalid_client');
  expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: rotated.client_secret })).status).toBe(200);
}, 4 * EMBEDDED_TIMEOUT);
