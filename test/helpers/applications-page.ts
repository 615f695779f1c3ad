/**
 * The users' applications page (/api/applications.php) walked as a browser: each form posts
 * `action` and the fields with the page's CSRF token.
 *
 * @example await signInOnApplicationsPage(browser, alice); await postApplicationsForm(browser, 'revoke', { client_id });
 */
import { expect } from '@jest/globals';
import type { Browser, Step, TestUser } from './browser.js';

export const APPLICATIONS_PATH = '/api/applications.php';

export const csrfOf = (page: Step) => /name="_csrf" value="([^"]*)"/.exec(page.body)?.[1] ?? '';

/** Opens the page and posts one of its forms (`action` + fields) with the page's CSRF token (or `csrf`). */
export async function postApplicationsForm(browser: Browser, action: string, fields: Record<string, string> = {}, csrf?: string) {
  const page = await browser.request(APPLICATIONS_PATH);
  return browser.request(APPLICATIONS_PATH, { form: { _csrf: csrf ?? csrfOf(page), action, ...fields } });
}

/** Signs in on the page (expects it to work) and returns the page then shown. */
export async function signInOnApplicationsPage(browser: Browser, user: TestUser) {
  const res = await postApplicationsForm(browser, 'sign_in', { username: user.username, password: user.password });
  expect(res.status).toBe(303);
  return browser.request(APPLICATIONS_PATH);
}
