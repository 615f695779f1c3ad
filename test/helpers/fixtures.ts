/** Users and clients created through the app's own stores and endpoint. */
import { randomBytes } from 'node:crypto';
import { expect } from '@jest/globals';
import type { TestApp } from './test-app.js';
import { obtainCode } from './browser.js';
import type { TestClient, TestUser } from './browser.js';

export async function createUser(t: TestApp, overrides: Partial<{ username: string; password: string; email: string; fullName: string }> = {}): Promise<TestUser & { email: string; fullName: string }> {
  const user = {
    username: `user${randomBytes(4).toString('hex')}`,
    password: 'correct horse battery',
    email: 'user@example.com',
    fullName: 'Test User',
    ...overrides,
  };
  await t.app.users.create(user);
  return user;
}

/** Registers through POST /api/register.php (JSON), as client teams' scripts do. */
export async function registerClient(t: TestApp, redirectUri = 'http://localhost:9999/callback', clientName = 'Test App'): Promise<TestClient & { client_name: string }> {
  const res = await fetch(`${t.baseUrl}/api/register.php`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: clientName, redirect_uri: redirectUri }),
  });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`);
  return res.json() as Promise<TestClient & { client_name: string }>;
}

/** Registers with RFC 7591 (a JSON body with `redirect_uris`); the 201 answer (`client_secret` only for a confidential client). */
export async function registerDynamicClient(t: TestApp, metadata: Record<string, unknown>): Promise<{ client_id: string; client_secret?: string } & Record<string, unknown>> {
  const res = await fetch(`${t.baseUrl}/api/register.php`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ client_id: string; client_secret?: string }>;
}

/** POST /api/token.php with a form body. */
export async function tokenRequest(t: TestApp, form: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.baseUrl}/api/token.php`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, unknown> };
}

export async function userinfo(t: TestApp, authorization?: string) {
  const res = await fetch(`${t.baseUrl}/api/userinfo.php`, { headers: authorization ? { authorization } : {} });
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, unknown> };
}

/** The spec's error response: `status`, a JSON content type and `{error: code, error_description}`. */
export function expectErrorResponse(res: { status: number; headers: Headers; body: Record<string, unknown> }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body.error).toBe(code);
  expect(typeof res.body.error_description).toBe('string');
}

/** HTTP Basic client credentials (RFC 6749 §2.3.1: form-urlencoded, then base64). */
export function basicAuth(c: TestClient): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(c.client_id)}:${encodeURIComponent(c.client_secret)}`).toString('base64')}`;
}

/** POST a form to any path (revocation, introspection); the body is parsed as JSON when there is one. */
export async function postForm(t: TestApp, path: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/** Walks the browser flow and redeems the code: the token response of a fresh authorization. */
export async function obtainTokens(t: TestApp, client: TestClient, user: TestUser) {
  const code = await obtainCode(t.baseUrl, client, user);
  const res = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
  if (res.status !== 200) throw new Error(`code exchange failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { access_token: string; refresh_token: string; expires_in: number; scope: string };
}
