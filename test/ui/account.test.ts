/**
 * The account page (/api/applications.php) and the mailed links, against a real SMTP server in
 * this process: a password reset (forgot-password form, mail, link, new password), its refusals
 * (expired, reused, forged links), a password change and "sign out everywhere" ending the other
 * sessions and the grants without offline_access, address verification, retries of a mail the
 * server did not take, the per-account budget, and mail off.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { APPLICATIONS_PATH as PATH, csrfOf, postApplicationsForm as post, signInOnApplicationsPage as signIn } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient } from '../helpers/browser.js';
import { createUser, obtainTokens, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import type { Mailbox } from '../helpers/mailbox.js';
import { startTestApp } from '../helpers/test-app.js';
import { createLogger } from '../../src/ops/logger.js';
import { deleteOldMail } from '../../src/mail/mail-outbox.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const FORGOT = '/api/forgot-password.php';

/** An address no other request of this file came from (the app trusts one proxy hop here). */
let addresses = 0;
const freshAddress = () => { addresses += 1; return `10.0.${(addresses >> 8) & 255}.${addresses & 255}`; };

/** Asks for a reset mail on the forgot-password form, as a browser does (from an address of its own unless told). */
async function askReset(t: TestApp, email: string, extra: Record<string, string> = {}): Promise<Step> {
  const headers = { 'x-forwarded-for': freshAddress(), ...extra };
  const browser = new Browser(t.baseUrl);
  const form = await browser.request(FORGOT, { headers });
  expect(form.status).toBe(200);
  return browser.request(FORGOT, { form: { _csrf: csrfOf(form), email }, headers });
}

/** Opens a mailed reset link and posts the new password on the page it opens. */
async function followReset(link: string, password: string): Promise<{ page: Step; done: Step }> {
  const url = new URL(link);
  const browser = new Browser(url.origin);
  const page = await browser.request(`${url.pathname}${url.search}`);
  if (page.status !== 200) return { page, done: page };
  const token = /name="token" value="([^"]*)"/.exec(page.body)![1]!;
  const done = await browser.request(url.pathname, { form: { _csrf: csrfOf(page), token, new_password: password, new_password_again: password } });
  return { page, done };
}

/** Polls until no mail is pending in the outbox (every request so far was handled by the worker). */
async function outboxSettled(t: TestApp) {
  for (let i = 0; i < 300; i += 1) {
    if (await t.app.db.prisma.mailMessage.count({ where: { status: 'pending' } }) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the mail outbox did not settle');
}

const refresh = (t: TestApp, c: TestClient, refreshToken: string) =>
  tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: c.client_id, client_secret: c.client_secret });

describe.each<Mode>(['postgres', 'embedded'])('accounts people look after themselves (%s)', (mode) => {
  let t: TestApp;
  let box: Mailbox;
  let app: TestClient;
  beforeAll(async () => {
    box = await startMailbox();
    t = await startTestApp({ mode, env: { SMTP_URL: box.url, MAIL_FROM: 'Accounts <accounts@example.com>', MAIL_RETRY_BASE_MS: '200', TRUST_PROXY: '1', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    app = await registerClient(t, 'http://localhost:9999/callback', 'Photo App');
    // Nothing listens there: the events are read from the outbox.
    await t.app.webhookEndpoints.add(app.client_id, { url: 'http://127.0.0.1:9/hook', events: ['user.password_reset', 'token.revoked'] });
  });
  afterAll(async () => {
    await t?.close();
    await box?.close();
  });

  test('reset: the mail\'s link (on BASE_URL) opens a form; the new password works, the old does not; every session and online grant ends', async () => {
    const user = await createUser(t, { email: `reset-${mode}@example.com` });
    const other = new Browser(t.baseUrl);
    await signIn(other, user);
    const tokens = await obtainTokens(t, app, user);

    // A Host and X-Forwarded-Host of an attacker's choosing change nothing in the link.
    const asked = await askReset(t, user.email, { 'x-forwarded-host': 'evil.example' });
    expect(asked.status).toBe(200);
    expect(asked.body).toContain('id="reset_requested"');
    const mail = await box.next(user.email);
    expect(mail.from).toContain('accounts@example.com');
    expect(mail.links).toHaveLength(1);
    expect(new URL(mail.links[0]!).origin).toBe(t.baseUrl);
    expect(mail.text).toContain(user.username);

    const { page, done } = await followReset(mail.links[0]!, 'a brand new password');
    expect(page.body).toContain('id="set_password"');
    expect(done.status).toBe(200);
    expect(done.body).toContain('id="password_reset"');

    expect((await post(new Browser(t.baseUrl), 'sign_in', { username: user.username, password: user.password })).status).toBe(401);
    await signIn(new Browser(t.baseUrl), { username: user.username, password: 'a brand new password' });
    // The other browser's sign-in ended; the grant without offline_access too.
    expect((await other.request(PATH)).body).toContain('id="sign_in"');
    expect((await refresh(t, app, tokens.refresh_token)).body.error).toBe('invalid_grant');
    const stored = await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: user.username } });
    expect(stored.emailVerified).toBe(true); // following the link proved the mailbox
    const events = (await t.app.db.prisma.auditEvent.findMany({ where: { userId: stored.id }, orderBy: { id: 'asc' } })).map((e) => e.event);
    expect(events).toEqual(expect.arrayContaining(['user.link_mailed', 'user.password_reset', 'user.signed_out', 'token.revoked']));
    // The client is told: its grant ended with the reset.
    const told = (await t.app.db.prisma.webhookDelivery.findMany({ where: { endpoint: { clientId: app.client_id } } }))
      .map((row) => row.payload as { type: string; data: Record<string, unknown> }).filter((event) => event.data.username === user.username);
    expect(told).toEqual(expect.arrayContaining([
      expect.objectContaining({ type: 'user.password_reset', data: expect.objectContaining({ client_id: app.client_id, grant_revoked: true }) }),
      expect.objectContaining({ type: 'token.revoked', data: expect.objectContaining({ reason: 'password_reset' }) }),
    ]));
  });

  test('a reset link works once; an expired or forged one is refused; none of them changes the password', async () => {
    const user = await createUser(t, { email: `once-${mode}@example.com` });
    await askReset(t, user.email);
    const first = await box.next(user.email);
    expect((await followReset(first.links[0]!, 'first new password')).done.status).toBe(200);
    const reused = await followReset(first.links[0]!, 'second new password');
    expect(reused.page.status).toBe(400);
    expect(reused.page.body).toContain('id="bad_link"');

    await askReset(t, user.email);
    const second = await box.next(user.email);
    // Its time is over (stored time moved back: nobody waits half an hour in a test).
    await t.app.db.prisma.accountToken.updateMany({ where: { usedAt: null, user: { username: user.username } }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await followReset(second.links[0]!, 'second new password')).page.status).toBe(400);

    const forged = new URL(second.links[0]!);
    forged.searchParams.set('token', 'A'.repeat(43));
    expect((await followReset(forged.toString(), 'second new password')).page.status).toBe(400);
    // A live page's form posted with a forged token: refused too.
    await askReset(t, user.email);
    const third = await box.next(user.email);
    const browser = new Browser(t.baseUrl);
    const url = new URL(third.links[0]!);
    const page = await browser.request(`${url.pathname}${url.search}`);
    const posted = await browser.request(url.pathname, { form: { _csrf: csrfOf(page), token: 'B'.repeat(43), new_password: 'forged password', new_password_again: 'forged password' } });
    expect(posted.status).toBe(400);

    await signIn(new Browser(t.baseUrl), { username: user.username, password: 'first new password' });
    const refusals = await t.app.db.prisma.auditEvent.findMany({ where: { event: 'user.link_refused' } });
    expect(refusals.map((r) => (r.detail as { reason: string }).reason)).toEqual(expect.arrayContaining(['used', 'expired', 'unknown']));
  });

  test('an address that names nobody gets the same answer, and no mail', async () => {
    const user = await createUser(t, { email: `known-${mode}@example.com` });
    const unknown = await askReset(t, `nobody-${mode}@example.com`);
    const known = await askReset(t, user.email);
    expect(unknown.status).toBe(known.status);
    expect(unknown.body.replace(/name="_csrf" value="[^"]*"/g, '')).toBe(known.body.replace(/name="_csrf" value="[^"]*"/g, ''));
    await box.next(user.email);
    // Neither a pattern nor another case of the address reaches anyone else's account: `_` and `%` are plain characters.
    expect((await askReset(t, `kno_n-${mode}@example.com`)).status).toBe(200);
    expect((await askReset(t, `%-${mode}@example.com`)).status).toBe(200);
    expect((await askReset(t, user.email.toUpperCase())).status).toBe(200);
    await outboxSettled(t);
    expect(box.waiting(`nobody-${mode}@example.com`)).toEqual([]);
    const mails = box.waiting(user.email);
    expect(mails).toHaveLength(1); // the upper-case request, sent to the address as stored
    expect(box.received.filter((mail) => mail.to.includes('%') || mail.to.includes('_'))).toEqual([]);
  });

  test('an account gets at most 3 reset mails an hour, however often it is asked for', async () => {
    const user = await createUser(t, { email: `budget-${mode}@example.com` });
    for (let i = 0; i < 4; i += 1) expect((await askReset(t, user.email)).status).toBe(200);
    await outboxSettled(t);
    expect(box.waiting(user.email)).toHaveLength(3);
  });

  test('reset requests from one client address: 10 an hour, then 429 with Retry-After (whatever address they name)', async () => {
    const from = { 'x-forwarded-for': '192.0.2.77' };
    for (let i = 0; i < 10; i += 1) expect((await askReset(t, `someone-${i}@example.com`, from)).status).toBe(200);
    const refused = await askReset(t, 'someone-else@example.com', from);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  test('a mail the server did not take is sent again', async () => {
    const user = await createUser(t, { email: `retry-${mode}@example.com` });
    const before = box.refused;
    box.failNext(1);
    await askReset(t, user.email);
    const mail = await box.next(user.email);
    expect(box.refused).toBe(before + 1);
    expect((await followReset(mail.links[0]!, 'after a retry')).done.status).toBe(200);
  });

  test('change password: the current one is required; the other sessions end, this one stays', async () => {
    const user = await createUser(t);
    const other = new Browser(t.baseUrl);
    await signIn(other, user);
    const browser = new Browser(t.baseUrl);
    await signIn(browser, user);
    const wrong = await post(browser, 'change_password', { current_password: 'not my password', new_password: 'changed password', new_password_again: 'changed password' });
    expect(wrong.status).toBe(401);
    const differ = await post(browser, 'change_password', { current_password: user.password, new_password: 'changed password', new_password_again: 'changed passw0rd' });
    expect(differ.status).toBe(400);
    const short = await post(browser, 'change_password', { current_password: user.password, new_password: 'short', new_password_again: 'short' });
    expect(short.status).toBe(400);
    const changed = await post(browser, 'change_password', { current_password: user.password, new_password: 'changed password', new_password_again: 'changed password' });
    expect(changed.status).toBe(303);
    const page = await browser.request(changed.location!);
    expect(page.body).toContain('id="change_password"');
    expect(page.body).toContain('Password changed.');
    expect((await other.request(PATH)).body).toContain('id="sign_in"');
    await signIn(new Browser(t.baseUrl), { username: user.username, password: 'changed password' });
  });

  test('sign out everywhere: every session ends, and every grant without offline_access', async () => {
    const user = await createUser(t);
    const other = new Browser(t.baseUrl);
    await signIn(other, user);
    const tokens = await obtainTokens(t, app, user);
    const browser = new Browser(t.baseUrl);
    await signIn(browser, user);
    const res = await post(browser, 'sign_out_everywhere', {});
    expect(res.status).toBe(303);
    expect((await browser.request(res.location!)).body).toContain('Signed out everywhere.');
    expect((await other.request(PATH)).body).toContain('id="sign_in"');
    expect((await refresh(t, app, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });

  test('sign out everywhere keeps the grants with offline_access', async () => {
    const user = await createUser(t);
    const stored = await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: user.username } });
    const iat = Math.floor(Date.now() / 1000);
    const grant = (id: string, scope: string) => ({
      type: 'Grant', id, expiresAt: new Date(Date.now() + 3_600_000),
      payload: { kind: 'Grant', jti: id, accountId: stored.id, clientId: app.client_id, openid: { scope }, iat, exp: iat + 3600 },
    });
    await t.app.db.prisma.oidcModel.createMany({ data: [grant(`online-${mode}`, 'openid profile'), grant(`offline-${mode}`, 'openid offline_access')] });
    const browser = new Browser(t.baseUrl);
    await signIn(browser, user);
    expect((await post(browser, 'sign_out_everywhere', {})).status).toBe(303);
    const left = await t.app.db.prisma.oidcModel.findMany({ where: { type: 'Grant', id: { in: [`online-${mode}`, `offline-${mode}`] } } });
    expect(left.map((row) => row.id)).toEqual([`offline-${mode}`]);
  });

  test('verify: the account page asks for the mail; its link sets email_verified', async () => {
    const user = await createUser(t, { email: `verify-${mode}@example.com` });
    const redirect = await new Browser(t.baseUrl).authorize(app, user, { scope: 'openid email' });
    const issued = await tokenRequest(t, { code: redirect.searchParams.get('code')!, client_id: app.client_id, client_secret: app.client_secret });
    const bearer = `Bearer ${String(issued.body.access_token)}`;
    expect((await userinfo(t, bearer)).body.email_verified).toBe(false);
    const browser = new Browser(t.baseUrl);
    const page = await signIn(browser, user);
    expect(page.body).toContain('id="email_unverified"');
    expect(page.body).toMatch(/id="verify_email"[^>]*>Verify/);
    expect((await post(browser, 'verify_email', {})).status).toBe(303);
    const mail = await box.next(user.email);
    const link = new URL(mail.links[0]!);
    expect(link.origin).toBe(t.baseUrl);
    const opened = await new Browser(t.baseUrl).request(`${link.pathname}${link.search}`);
    expect(opened.status).toBe(200);
    expect(opened.body).toContain('id="email_verified"');
    expect((await browser.request(PATH)).body).toContain('id="email_verified"');
    expect((await userinfo(t, bearer)).body.email_verified).toBe(true); // the claim, for the client that asked for `email`
    expect((await new Browser(t.baseUrl).request(`${link.pathname}${link.search}`)).status).toBe(400); // once only
  });

  test('the cleanup job\'s sweep: mails done with and links expired a week ago go; a pending mail stays', async () => {
    const user = await createUser(t);
    const { id } = await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: user.username } });
    const old = new Date(Date.now() - 8 * 86_400_000);
    const mail = (suffix: string, status: string) => ({ id: `sweep-${suffix}-${mode}`, kind: 'email_verification', recipient: user.email, userId: id, status, sendBefore: old, createdAt: old });
    await t.app.db.prisma.mailMessage.createMany({ data: [mail('sent', 'sent'), mail('pending', 'pending')] });
    await t.app.db.prisma.accountToken.create({ data: { digest: `sweep-${mode}`, purpose: 'password_reset', userId: id, email: user.email, expiresAt: old } });
    await deleteOldMail(t.app.db.prisma, 100);
    expect((await t.app.db.prisma.mailMessage.findMany({ where: { id: { startsWith: 'sweep-' } } })).map((row) => row.id)).toEqual([`sweep-pending-${mode}`]);
    expect(await t.app.db.prisma.accountToken.findUnique({ where: { digest: `sweep-${mode}` } })).toBeNull();
    await t.app.db.prisma.mailMessage.delete({ where: { id: `sweep-pending-${mode}` } });
  });

  test('every form of the account and the reset pages needs the CSRF token', async () => {
    const user = await createUser(t);
    const browser = new Browser(t.baseUrl);
    await signIn(browser, user);
    for (const action of ['change_password', 'sign_out_everywhere', 'verify_email']) {
      expect((await post(browser, action, { current_password: user.password, new_password: 'x'.repeat(10), new_password_again: 'x'.repeat(10) }, 'forged')).status).toBe(403);
    }
    expect((await browser.request(FORGOT, { form: { email: user.email } })).status).toBe(403);
    expect((await browser.request('/api/reset-password.php', { form: { token: 'A'.repeat(43), new_password: 'x'.repeat(10), new_password_again: 'x'.repeat(10) } })).status).toBe(403);
  });
});

describe('the embedded default without SMTP_URL: mails go to the log', () => {
  test('a start-up line says so, and the reset mail, link and all, is a log line', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (chunk: string) => { lines.push(chunk); } } });
    const t = await startTestApp({ mode: 'embedded', logger });
    try {
      expect(lines.some((line) => line.includes('SMTP_URL is unset: mails'))).toBe(true);
      const user = await createUser(t, { email: 'logged@example.com' });
      expect((await askReset(t, user.email)).status).toBe(200);
      let mail: { mail_to: string; text: string } | undefined;
      for (let i = 0; i < 300 && !mail; i += 1) {
        mail = lines.map((line) => JSON.parse(line) as { mail_to?: string; text: string }).find((line) => line.mail_to === user.email) as typeof mail;
        if (!mail) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const link = /https?:\/\/\S+/.exec(mail!.text)![0];
      expect(link.startsWith(`${t.baseUrl}/api/reset-password.php?token=`)).toBe(true);
      expect((await followReset(link, 'set from the log')).done.status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('mail off: a database of its own and no SMTP_URL', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ mode: 'postgres' }); });
  afterAll(async () => { await t?.close(); });

  test('reset and verification say plainly that mail is off', async () => {
    const forgot = await new Browser(t.baseUrl).request(FORGOT);
    expect(forgot.status).toBe(503);
    expect(forgot.body).toContain('id="mail_off"');
    const user = await createUser(t);
    const browser = new Browser(t.baseUrl);
    await signIn(browser, user);
    const verify = await post(browser, 'verify_email', {});
    expect(verify.status).toBe(503);
    expect(verify.body).toContain('SMTP_URL');
  });
});
