/**
 * oidc-provider serves some routes at its default paths (RP-initiated logout's
 * `/session/end`, `/session/end/confirm` and `/session/end/success`; ours are under
 * `/api/logout.php`): the service hands it only the paths it offers (src/oidc/routes.ts
 * PROVIDER_PATHS), so every other path is our 404.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('paths the provider would serve but the service does not offer', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t?.close(); });

  test.each([
    ['POST', '/session/end/confirm', 'application/x-www-form-urlencoded', 'xsrf=x&logout=yes'],
    ['GET', '/session/end', undefined, undefined],
    ['GET', '/session/end/success', undefined, undefined],
    ['POST', '/reg', 'application/json', '{}'],
    ['POST', '/request', 'application/x-www-form-urlencoded', 'client_id=x'],
    ['POST', '/device/auth', 'application/x-www-form-urlencoded', 'client_id=x'],
  ])('%s %s is 404 not_found, never reaching the provider', async (method, path, type, body) => {
    const res = await fetch(`${t.baseUrl}${path}`, { method, headers: { accept: 'application/json', ...(type ? { 'content-type': type } : {}) }, body, redirect: 'manual' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'not_found', error_description: `nothing is served at ${method} ${path}` });
  });
});
