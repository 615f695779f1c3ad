/**
 * The application settings page (/api/settings.php) walked as a browser: each form is found on
 * the page by its `action` (and `id`) and posted with its own CSRF token.
 *
 * @example let page = await signInOnSettingsPage(browser, client); page = await postSettingsForm(browser, page, 'rotate_secret'); pageText(page, 'new_client_secret')
 */
import type { Browser, Step } from './browser.js';

export const SETTINGS_PATH = '/api/settings.php';

/** Text of the page's HTML as shown (the entities the views escape). */
export const unescapeHtml = (html: string) => html.replaceAll('&amp;', '&').replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>');

/** The text of the element with this id, unescaped; undefined when the page has none. */
export function pageText(page: Step, id: string): string | undefined {
  const match = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(page.body);
  return match ? unescapeHtml(match[1]!) : undefined;
}

/** Posts the form on `page` whose action contains `action=<name>` (and `id=<id>`), with its CSRF token; follows a 303. */
export async function postSettingsForm(browser: Browser, page: Step, name: string, fields: Record<string, string | string[]> = {}, id?: string): Promise<Step> {
  const forms = [...page.body.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)];
  const form = forms.find((m) => {
    const action = new URL(unescapeHtml(m[1]!), browser.baseUrl);
    return action.searchParams.get('action') === name && (id === undefined || action.searchParams.get('id') === id);
  });
  if (!form) throw new Error(`no ${name} form on the page:\n${page.body}`);
  const csrf = /name="_csrf" value="([^"]*)"/.exec(form[2]!)![1]!;
  const step = await browser.request(unescapeHtml(form[1]!), { form: { _csrf: csrf, ...fields } });
  return step.status === 303 && step.location ? browser.request(step.location) : step;
}

/** Opens the page and signs in with the client's credentials; returns the page then shown. */
export async function signInOnSettingsPage(browser: Browser, client: { client_id: string; client_secret: string }): Promise<Step> {
  const page = await browser.request(SETTINGS_PATH);
  return postSettingsForm(browser, page, 'sign_in', { client_id: client.client_id, client_secret: client.client_secret });
}
