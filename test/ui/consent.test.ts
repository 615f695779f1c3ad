/**
 * The consent page tells the truth: it always names where the answer goes; for every client that
 * registered itself (the spec's page or JSON, RFC 7591, a metadata document) it says so and that
 * nobody checked it; only an operator's client (clients:create) goes without that note. It lists
 * each resource server asked for by the name and scopes its operator declared (only the scopes
 * asked); the profile is listed only when asked for. A step-up in a sign-in session asks only for
 * the scopes the grant lacks; a consent asked again with nothing new names what the request asks.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { TestUser } from '../helpers/browser.js';
import { createUser, registerClient, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const TOOLS = 'https://tools.example/mcp';
let t: TestApp;
let user: TestUser;
beforeAll(async () => {
  t = await startTestApp({ env: { RESOURCES: JSON.stringify([{ uri: TOOLS, name: 'Example <tools>', scopes: 'tools:read tools:call' }]) } });
  user = await createUser(t);
});
afterAll(async () => { await t?.close(); });

const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/\s+/g, ' ');

async function consentOf(clientId: string, redirectUri: string, params: Record<string, string>): Promise<string> {
  const browser = new Browser(t.baseUrl);
  const redirect = await browser.authorize({ client_id: clientId, client_secret: '', redirect_uri: redirectUri }, user, params);
  expect(redirect.searchParams.get('code')).toBeTruthy();
  return browser.consentPage!;
}

describe('the consent page', () => {
  test('a self-registered client asking for a resource: says it registered itself, where the answer goes, the resource and the scopes asked in the operator\'s words', async () => {
    const { client_id: clientId } = await registerDynamicClient(t, { redirect_uris: ['http://127.0.0.1:9999/callback'], token_endpoint_auth_method: 'none', client_name: 'Agent <b>' });
    const html = await consentOf(clientId, 'http://127.0.0.1:9999/callback', { resource: `${TOOLS}/`, scope: 'tools:read', ...pkceParams(pkcePair()) });
    expect(html).toContain('id="self_registered"');
    expect(html).not.toContain('<b>');
    const page = text(html);
    expect(page).toContain('This application registered itself with this service (RFC 7591): its name is its own, checked by no one.');
    expect(page).toContain('Agent <b> wants access to:');
    expect(page).toContain(`Example <tools> ( ${TOOLS} ): tools:read`);
    expect(page).not.toContain('tools:call');
    expect(page).not.toContain('your username');
    expect(page).toContain('Your answer is sent to 127.0.0.1:9999.');
  });

  test('a client that registered itself in the spec\'s shape: the profile, the note that nobody checked it, where the answer goes; a resource it asks for is listed too', async () => {
    const client = await registerClient(t, 'http://localhost:9999/callback', 'Spec App');
    const plain = text(await consentOf(client.client_id, client.redirect_uri, {}));
    expect(plain).toContain('Spec App wants to read your profile: your username your e-mail address your full name');
    expect(plain).toContain('This application registered itself with this service: its name is its own, checked by no one.');
    expect(plain).toContain('Your answer is sent to localhost:9999.');

    const both = text(await consentOf(client.client_id, client.redirect_uri, { resource: TOOLS, scope: 'openid tools:call' }));
    expect(both).toContain('Spec App wants to read your profile:');
    expect(both).toContain(`Example <tools> ( ${TOOLS} ), too: tools:call`);
  });

  test('a step-up in the same sign-in session asks only for what is new; the grant keeps both, and so does the token', async () => {
    const redirect = 'http://127.0.0.1:9999/callback';
    const { client_id: clientId } = await registerDynamicClient(t, { redirect_uris: [redirect], token_endpoint_auth_method: 'none', client_name: 'Stepper' });
    const browser = new Browser(t.baseUrl);
    await browser.authorize({ client_id: clientId, client_secret: '', redirect_uri: redirect }, user, { resource: TOOLS, scope: 'tools:read', ...pkceParams(pkcePair()) });
    expect(text(browser.consentPage!)).toContain(`Example <tools> ( ${TOOLS} ): tools:read`);
    browser.consentPage = undefined;
    const pkce = pkcePair();
    const back = await browser.authorize({ client_id: clientId, client_secret: '', redirect_uri: redirect }, user, { resource: TOOLS, scope: 'tools:read tools:call', ...pkceParams(pkce) });
    const page = text(browser.consentPage!);
    expect(page).toContain(`Example <tools> ( ${TOOLS} ): tools:call`);
    expect(page).not.toContain('tools:read');
    const grants = await t.app.db.prisma.oidcModel.findMany({ where: { type: 'Grant', payload: { path: ['clientId'], equals: clientId } } });
    expect(grants.map((grant) => (grant.payload as { resources: unknown }).resources)).toEqual([{ [TOOLS]: 'tools:read tools:call' }]);
    const tokens = await tokenRequest(t, { code: back.searchParams.get('code')!, client_id: clientId, code_verifier: pkce.verifier, resource: TOOLS, redirect_uri: redirect });
    expect(tokens.body.scope).toBe('tools:read tools:call');
  });

  test('a native app asked again for what it already holds (each time, RFC 8252 §8.6): the page names that, not the profile', async () => {
    const { client_id: clientId } = await registerDynamicClient(t, { redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none', application_type: 'native', client_name: 'Native Tool' });
    const browser = new Browser(t.baseUrl);
    const native = { client_id: clientId, client_secret: '', redirect_uri: 'http://127.0.0.1:5555/cb' };
    await browser.authorize(native, user, { resource: TOOLS, scope: 'tools:read', ...pkceParams(pkcePair()) });
    browser.consentPage = undefined;
    await browser.authorize(native, user, { resource: TOOLS, scope: 'tools:read', ...pkceParams(pkcePair()) });
    const page = text(browser.consentPage!);
    expect(page).toContain(`Native Tool wants access to: Example <tools> ( ${TOOLS} ): tools:read`);
    expect(page).not.toContain('your profile');
  });

  test('an operator\'s client: no note, but still where the answer goes', async () => {
    const { client } = await t.app.clients.register({ clientName: 'Payroll', redirectUri: 'https://payroll.example/cb' }, undefined, 'operator');
    const html = await consentOf(client.clientId, client.redirectUri!, {});
    expect(html).not.toContain('id="self_registered"');
    const page = text(html);
    expect(page).toContain('Payroll wants to read your profile:');
    expect(page).toContain('Your answer is sent to payroll.example.');
  });
});
