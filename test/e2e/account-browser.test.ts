/**
 * The account flows in a real browser (Debian's Chromium driven by playwright-core), with a real
 * SMTP server in this process: "Forgot password?" on the login page, the mail, its link opened in
 * the browser, the new password; the link refused once used, expired or forged; a password change
 * on the account page; each ending the user's sessions in another browser.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import type { Mailbox } from '../helpers/mailbox.js';
import { CHROMIUM, describeWith, program } from '../helpers/system-tool.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const withChromium = describeWith(CHROMIUM);

withChromium('accounts in a real browser (Chromium)', () => {
  describe.each<Mode>(['postgres', 'embedded'])('%s', (mode) => {
    let t: TestApp;
    let box: Mailbox;
    let browser: Browser;
    const contexts: BrowserContext[] = [];
    beforeAll(async () => {
      box = await startMailbox();
      [t, browser] = await Promise.all([
        startTestApp({ mode, env: { SMTP_URL: box.url } }),
        chromium.launch({ executablePath: program(CHROMIUM), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] }),
      ]);
    });
    afterAll(async () => {
      for (const context of contexts) await context.close();
      await browser?.close();
      await t?.close();
      await box?.close();
    });

    async function newPage(): Promise<Page> {
      const context = await browser.newContext();
      context.setDefaultTimeout(10_000);
      contexts.push(context);
      return context.newPage();
    }

    async function signInOnAccountPage(page: Page, username: string, password: string) {
      await page.goto(`${t.baseUrl}/api/applications.php`);
      await page.fill('#username', username);
      await page.fill('#password', password);
      await page.click('#sign_in');
      await page.waitForSelector('#change_password');
    }

    /** Opens `link` and sets `password` on the page it opens; resolves the id of what the page then says. */
    async function reset(page: Page, link: string, password: string): Promise<string> {
      await page.goto(link);
      if (await page.$('#bad_link')) return 'bad_link';
      await page.fill('#new_password', password);
      await page.fill('#new_password_again', password);
      await page.click('#set_password');
      await page.waitForSelector('#password_reset, #bad_link');
      return (await page.$('#password_reset')) ? 'password_reset' : 'bad_link';
    }

    test('forgot password from the login page: the mailed link sets a new one; the other browser is signed out; the link works once', async () => {
      const user = await createUser(t, { email: `chromium-reset-${mode}@example.com` });
      const client = await registerClient(t, 'http://127.0.0.1:9/callback', 'Some App');
      const elsewhere = await newPage();
      await signInOnAccountPage(elsewhere, user.username, user.password);

      const page = await newPage();
      await page.goto(`${t.baseUrl}/api/authorize.php?client_id=${client.client_id}&redirect_uri=${encodeURIComponent(client.redirect_uri)}&response_type=code&state=s`);
      const [forgot] = await Promise.all([page.context().waitForEvent('page'), page.click('#forgot_password')]);
      await forgot.waitForSelector('#email');
      await forgot.fill('#email', user.email);
      await forgot.click('#send_reset');
      await forgot.waitForSelector('#reset_requested');

      const mail = await box.next(user.email);
      const link = mail.links[0]!;
      expect(new URL(link).origin).toBe(t.baseUrl);
      expect(await reset(forgot, link, 'chosen in chromium')).toBe('password_reset');

      await elsewhere.reload();
      await elsewhere.waitForSelector('#sign_in');
      await signInOnAccountPage(await newPage(), user.username, 'chosen in chromium');
      expect(await reset(await newPage(), link, 'reused link')).toBe('bad_link');
    });

    test('an expired or forged link opens no form', async () => {
      const user = await createUser(t, { email: `chromium-expired-${mode}@example.com` });
      const page = await newPage();
      await page.goto(`${t.baseUrl}/api/forgot-password.php`);
      await page.fill('#email', user.email);
      await page.click('#send_reset');
      await page.waitForSelector('#reset_requested');
      const link = (await box.next(user.email)).links[0]!;
      const forged = new URL(link);
      forged.searchParams.set('token', `${forged.searchParams.get('token')!.slice(0, -2)}xx`);
      expect(await reset(page, forged.toString(), 'forged link')).toBe('bad_link');
      await t.app.db.prisma.accountToken.updateMany({ where: { usedAt: null, user: { username: user.username } }, data: { expiresAt: new Date(Date.now() - 1000) } });
      expect(await reset(page, link, 'expired link')).toBe('bad_link');
      await signInOnAccountPage(await newPage(), user.username, user.password); // unchanged
    });

    test('changing the password on the account page signs the other browser out, not this one', async () => {
      const user = await createUser(t);
      const elsewhere = await newPage();
      await signInOnAccountPage(elsewhere, user.username, user.password);
      const page = await newPage();
      await signInOnAccountPage(page, user.username, user.password);
      await page.fill('#current_password', user.password);
      await page.fill('#new_password', 'changed in chromium');
      await page.fill('#new_password_again', 'changed in chromium');
      await page.click('#change_password');
      await page.waitForSelector('#notice');
      expect(await page.textContent('#notice')).toContain('Password changed');
      await page.reload();
      await page.waitForSelector('#change_password');
      await elsewhere.reload();
      await elsewhere.waitForSelector('#sign_in');
    });
  });
});
