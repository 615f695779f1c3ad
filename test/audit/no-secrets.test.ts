/**
 * No secret reaches the audit trail, nor any log line: whole flows run (registration, logins
 * right and wrong, a password typed into the username field, consent, code exchange, refresh,
 * revocation, a code replay, the applications page's sign-in, the settings page's sign-in and
 * secret rotation, webhook endpoints through the API, a secret rotation by the operator), then
 * every row of `audit_events` and every log line (access, error and audit) is searched for each
 * secret those flows used: passwords, client secrets (the rotated ones too), the webhook signing
 * secret, the code, tokens, cookies (the pages' sessions included), the Authorization header. The
 * same for the administration CLI's commands that handle passwords and client secrets.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createClientSettings } from '../../src/clients/client-settings.js';
import { createLogger } from '../../src/ops/logger.js';
import { postApplicationsForm, signInOnApplicationsPage } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import { cliFor, expectSuccess } from '../helpers/cli.js';
import { basicAuth, createUser, postForm, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { webhooksApi } from '../helpers/receiver.js';
import { pageText, postSettingsForm, signInOnSettingsPage } from '../helpers/settings-page.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('audit rows and lines of whole flows', () => {
  let t: TestApp;
  const lines: string[] = [];
  const auditLines = () => lines.filter((line) => JSON.parse(line).msg === 'audit');
  const secrets: Record<string, string> = {};
  let clientId: string;
  /** The values of the cookies a browser was sent, as secrets (the short ones are flags, not sessions). */
  const cookiesOf = (name: string, browser: Browser) => {
    for (const [index, line] of browser.setCookies.entries()) {
      const value = line.split(';')[0]!.split('=').slice(1).join('=');
      if (value.length >= 8) secrets[`${name} cookie ${index}`] = value;
    }
  };
  beforeAll(async () => {
    const logger = createLogger({ level: 'trace', destination: { write: (line: string) => { lines.push(line); } } });
    t = await startTestApp({ logger, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });

    const user = await createUser(t, { password: 'pw-never-audited-4K' });
    secrets.password = user.password;
    const client = await registerClient(t);
    secrets.client_secret = client.client_secret;
    clientId = client.client_id;

    const browser = new Browser(t.baseUrl);
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' });
    let page = await browser.follow(`/api/authorize.php?${query}`);
    secrets.wrong_password = 'wrong-pw-never-audited-7Q';
    page = await browser.submit(page, '/login', { username: user.username, password: secrets.wrong_password });
    secrets.password_as_username = 'pw-typed-as-username-2M';
    page = await browser.submit(page, '/login', { username: secrets.password_as_username, password: user.password });
    page = await browser.submit(page, '/login', { username: user.username, password: user.password });
    const redirect = new URL((await browser.submit(page, '/confirm')).location!);
    secrets.code = redirect.searchParams.get('code')!;
    cookiesOf('login', browser);

    const basic = basicAuth(client);
    secrets.authorization = basic.slice('Basic '.length);
    const tokens = await tokenRequest(t, { code: secrets.code, client_id: client.client_id, client_secret: client.client_secret });
    secrets.access_token = String(tokens.body.access_token);
    secrets.refresh_token = String(tokens.body.refresh_token);
    const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: secrets.refresh_token }, { authorization: basic });
    secrets.refreshed_refresh_token = String(refreshed.body.refresh_token);
    await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: secrets.refresh_token }, { authorization: basic }); // reuse
    await tokenRequest(t, { code: secrets.code, client_id: client.client_id, client_secret: client.client_secret }); // replay
    const again = await tokenRequest(t, { code: (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!, client_id: client.client_id, client_secret: client.client_secret });
    await postForm(t, '/api/revoke.php', { token: String(again.body.access_token) }, { authorization: basic });

    const apps = new Browser(t.baseUrl);
    await postApplicationsForm(apps, 'sign_in', { username: user.username, password: secrets.wrong_password });
    await signInOnApplicationsPage(apps, user);
    await new Browser(t.baseUrl).authorize(client, user);
    await postApplicationsForm(apps, 'revoke', { client_id: client.client_id });
    cookiesOf('applications page', apps);
    expect(Object.keys(secrets).some((name) => name.startsWith('applications page cookie'))).toBe(true);

    // The settings page: a wrong secret, the right one, a rotation (the new secret is shown once).
    const settings = new Browser(t.baseUrl);
    expect((await signInOnSettingsPage(settings, { ...client, client_secret: 'wrong-client-secret-never-logged-6D' })).status).toBe(401);
    secrets.wrong_client_secret = 'wrong-client-secret-never-logged-6D';
    const signedIn = await signInOnSettingsPage(settings, client);
    expect(signedIn.status).toBe(200);
    const rotatedOnPage = await postSettingsForm(settings, signedIn, 'rotate_secret');
    secrets.client_secret_rotated_on_page = pageText(rotatedOnPage, 'new_client_secret')!;
    cookiesOf('settings page', settings);
    expect(Object.keys(secrets).some((name) => name.startsWith('settings page cookie'))).toBe(true);
    const rotated = { ...client, client_secret: secrets.client_secret_rotated_on_page };
    secrets.rotated_authorization = basicAuth(rotated).slice('Basic '.length); // the webhooks API's Authorization header

    const hook = await webhooksApi(t.baseUrl, rotated, { json: { url: 'http://127.0.0.1:9/hook?token=capability-never-audited', events: ['token.revoked'] } });
    expect(hook.status).toBe(201);
    secrets.webhook_secret = String(hook.body.secret);
    expect(secrets.webhook_secret).toMatch(/^whsec_/);
    secrets.webhook_url_capability = 'capability-never-audited';
    await webhooksApi(t.baseUrl, rotated, { method: 'DELETE', query: { id: String(hook.body.id) } });
    const operator = createClientSettings(t.app.records.change);
    secrets.rotated_client_secret = (await operator.rotateSecret(client.client_id, { actor: 'operator' })).clientSecret;
  }, 60_000);
  afterAll(async () => { await t?.close(); });

  test('the flows were audited, rows and lines alike', async () => {
    const events = new Set((await t.app.db.prisma.auditEvent.findMany({ select: { event: true } })).map((row) => row.event));
    expect([...events].sort()).toEqual([
      'client.registered', 'client.secret_rotated', 'consent.granted', 'login.failed', 'login.succeeded',
      'token.issued', 'token.refreshed', 'token.reuse_detected', 'token.revoked', 'webhook.endpoint_added', 'webhook.endpoint_removed',
    ]);
    expect(auditLines().length).toBe(await t.app.db.prisma.auditEvent.count());
    expect(await t.app.db.prisma.auditEvent.count({ where: { event: 'client.secret_rotated', actor: `client:${clientId}` } })).toBe(1); // the page's
  });

  test('the log holds access lines of every page and API the flows used, besides the audit lines', () => {
    const routes = new Set(lines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request').map((line) => line.route as string));
    for (const route of ['/api/token.php', '/api/revoke.php', '/interaction/:uid/login', '/api/applications.php', '/api/settings.php', '/api/webhooks.php']) expect(routes).toContain(route);
  });

  test('no secret of the flows appears in any row or in any line, access, error or audit', async () => {
    const rows = JSON.stringify(await t.app.db.prisma.auditEvent.findMany(), (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value));
    const audit = auditLines().join('');
    const all = lines.join('');
    for (const [name, secret] of Object.entries(secrets)) {
      expect(secret.length).toBeGreaterThanOrEqual(8);
      if (rows.includes(secret)) throw new Error(`an audit row contains the ${name}`);
      if (audit.includes(secret)) throw new Error(`an audit line contains the ${name}`);
      if (all.includes(secret)) throw new Error(`a log line contains the ${name}`);
    }
  });
});

describe('audit rows and lines of the CLI', () => {
  test('user:create, users:set-password (stdin and argument) and clients:rotate-secret leave no secret in rows or lines', async () => {
    const t = await startTestApp();
    try {
      const cli = cliFor(t);
      const client = await registerClient(t);
      const secrets = { created: 'cli-created-pw-1R', stdin: 'cli-stdin-pw-5T', argument: 'cli-argument-pw-8W' };
      const runs = [
        await cli(['user:create', '--username', 'carol', '--email', 'c@example.com', '--full-name', 'Carol', '--password-stdin'], `${secrets.created}\n`),
        await cli(['users:set-password', 'carol', '--password-stdin'], secrets.stdin),
        await cli(['users:set-password', 'carol', '--password', secrets.argument]),
        await cli(['clients:rotate-secret', client.client_id, '--json']),
      ].map(expectSuccess);
      const rotated = (JSON.parse(runs[3]!.stdout) as { client_secret: string }).client_secret;
      const rows = await t.app.db.prisma.auditEvent.findMany({ where: { actor: 'operator' } });
      expect(rows.map((row) => row.event).sort()).toEqual(['client.secret_rotated', 'user.created', 'user.password_set', 'user.password_set', 'user.signed_out', 'user.signed_out']);
      const written = JSON.stringify(rows.map(({ id, ...row }) => ({ id: String(id), ...row }))) + runs.map((run) => run.stderr).join('');
      expect(runs.map((run) => run.stderr).join('')).toContain('"msg":"audit"');
      for (const secret of [...Object.values(secrets), rotated, client.client_secret]) expect(written).not.toContain(secret);
    } finally {
      await t.close();
    }
  }, 120_000);
});
