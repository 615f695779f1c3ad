/**
 * `openapi.json` is a valid OpenAPI 3.1 document, `GET /api/openapi.json` serves it
 * as it is, and it tells the truth: real flows run against the app, and every live answer
 * (status, content type, required headers, body) must be one the document declares for that
 * path and method. An undocumented status or content type fails the test.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ERROR_STATUS } from '../../src/errors.js';
import { HEALTH_PATH, LIVE_PATH, READY_PATH } from '../../src/http/health.js';
import { OPENAPI_FILE, OPENAPI_PATH } from '../../src/http/openapi-document.js';
import { DISCOVERY_PATHS, ROUTES } from '../../src/oidc/routes.js';
import { APPLICATIONS_PATH } from '../../src/ui/applications.js';
import { FORGOT_PATH, RESET_PATH, VERIFY_PATH } from '../../src/ui/account-links.js';
import { REGISTER_PATH } from '../../src/ui/register.js';
import { SETTINGS_PATH } from '../../src/ui/settings-session.js';
import { WEBHOOKS_PATH } from '../../src/ui/webhooks-api.js';
import { Browser } from '../helpers/browser.js';
import { assertionForm, jwksOf, makeKey, signAssertion } from '../helpers/client-keys.js';
import { basicAuth, createUser, obtainTokens, registerClient } from '../helpers/fixtures.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { startPostgresServer } from '../helpers/postgres-server.js';
import type { PostgresServer } from '../helpers/postgres-server.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const text = fs.readFileSync(OPENAPI_FILE, 'utf8');
const doc = JSON.parse(text) as Json;

// ajv-formats is CommonJS: its default export is the function itself or under `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'openapi');

const pointer = (...parts: string[]) => parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Follows a `#/components/...` reference inside the document. */
function resolve(node: Json): Json {
  if (typeof node.$ref !== 'string') return node;
  return resolve(node.$ref.slice(2).split('/').reduce((at: Json, key: string) => at[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc));
}

interface Live { status: number; headers: Headers; text: string; body: unknown }

/** Fails unless the document declares this answer of `method path`; returns the parsed body. */
function expectDocumented(method: string, path: string, res: Live): void {
  const operation = doc.paths[path]?.[method.toLowerCase()];
  expect({ path, method, documented: Boolean(operation) }).toEqual({ path, method, documented: true });
  const declared = operation.responses[String(res.status)] ?? operation.responses.default;
  expect({ path, method, status: res.status, documented: Boolean(declared), body: res.text.slice(0, 300) })
    .toEqual({ path, method, status: res.status, documented: true, body: res.text.slice(0, 300) });
  const response = resolve(declared);
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    if (resolve(header as Json).required) expect({ header: name, value: res.headers.get(name) }).toEqual({ header: name, value: expect.any(String) });
  }
  if (!response.content) {
    expect({ path, status: res.status, body: res.text }).toEqual({ path, status: res.status, body: '' });
    return;
  }
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  expect({ path, status: res.status, type, documented: type in response.content }).toEqual({ path, status: res.status, type, documented: true });
  if (!type.endsWith('json')) return;
  const at = typeof declared.$ref === 'string'
    ? `openapi#/${pointer('components', 'responses', declared.$ref.split('/').at(-1)!, 'content', type, 'schema')}`
    : `openapi#/${pointer('paths', path, method.toLowerCase(), 'responses', String(res.status), 'content', type, 'schema')}`;
  const validate = ajv.getSchema(at)!;
  expect(validate).toBeDefined();
  const valid = validate(res.body);
  expect({ path, method, status: res.status, body: res.body, errors: valid ? null : validate.errors })
    .toEqual({ path, method, status: res.status, body: res.body, errors: null });
}

async function call(t: TestApp, method: string, path: string, init: { query?: Record<string, string>; form?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {}): Promise<Live> {
  const url = new URL(path, t.baseUrl);
  for (const [key, value] of Object.entries(init.query ?? {})) url.searchParams.set(key, value);
  const headers: Record<string, string> = { ...init.headers };
  let body: string | undefined;
  if (init.form) { headers['content-type'] = 'application/x-www-form-urlencoded'; body = new URLSearchParams(init.form).toString(); }
  if (init.json !== undefined) { headers['content-type'] = 'application/json'; body = JSON.stringify(init.json); }
  const res = await fetch(url, { method, headers, body, redirect: 'manual' });
  const raw = await res.text();
  let parsed: unknown = raw;
  if ((res.headers.get('content-type') ?? '').includes('json') && raw) parsed = JSON.parse(raw);
  const live = { status: res.status, headers: res.headers, text: raw, body: parsed };
  expectDocumented(method, path, live);
  return live;
}

describe('openapi.json', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc);
    expect(result).toEqual({ valid: true });
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  test('describes every path the app serves (the login and consent pages, reached only by redirect, aside)', () => {
    const served = [...Object.values(ROUTES), ...DISCOVERY_PATHS, REGISTER_PATH, SETTINGS_PATH, WEBHOOKS_PATH, APPLICATIONS_PATH, FORGOT_PATH, RESET_PATH, VERIFY_PATH, OPENAPI_PATH, HEALTH_PATH, LIVE_PATH, READY_PATH];
    expect(Object.keys(doc.paths).sort()).toEqual([...new Set(served)].sort());
  });

  test("the error body's codes are exactly src/errors.ts's", () => {
    expect([...doc.components.schemas.Error.properties.error.enum].sort()).toEqual(Object.keys(ERROR_STATUS).sort());
  });

  test('every declared error status carries only codes of that status', () => {
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, operation] of Object.entries(item as Json)) {
        for (const [status, declared] of Object.entries((operation as Json).responses as Json)) {
          const json = resolve(declared as Json).content?.['application/json']?.schema;
          const codes: string[] | undefined = json?.allOf?.[1]?.properties?.error?.enum;
          for (const code of codes ?? []) {
            expect([path, method, code, Number(status)]).toEqual([path, method, code, ERROR_STATUS[code as keyof typeof ERROR_STATUS]]);
          }
        }
      }
    }
  });
});

describe('the live API answers as openapi.json says', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', REGISTRATION_CLIENT_CREDENTIALS: 'true' } }); });
  afterAll(async () => { await t?.close(); });

  test(`GET ${OPENAPI_PATH} serves the file as it is`, async () => {
    const res = await call(t, 'GET', OPENAPI_PATH);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.text).toBe(text);
    // Paths are exact: another spelling is 404 naming the path meant.
    const other = await fetch(`${t.baseUrl}/API/OpenAPI.json`);
    expect(other.status).toBe(404);
    expect(await other.text()).toContain(OPENAPI_PATH);
  });

  test('health, discovery and keys', async () => {
    for (const path of ['/healthz/live', '/healthz/ready', '/healthz']) expect((await call(t, 'GET', path)).status).toBe(200);
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/api/jwks.php']) {
      expect((await call(t, 'GET', path)).status).toBe(200);
    }
  });

  test('registration, authorization, code exchange, refresh, userinfo, introspection, revocation', async () => {
    expect((await call(t, 'GET', '/api/register.php')).status).toBe(200);
    const created = await call(t, 'POST', '/api/register.php', { json: { client_name: 'Docs', redirect_uri: 'http://localhost:9999/cb' } });
    expect(created.status).toBe(201);
    const client = created.body as { client_id: string; client_secret: string; redirect_uri: string };
    expect((await call(t, 'POST', '/api/register.php', { json: { client_name: '', redirect_uri: 'ftp://x' } })).status).toBe(400);

    const authorize = { client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', state: 's' };
    expect((await call(t, 'GET', '/api/authorize.php', { query: authorize })).status).toBeGreaterThanOrEqual(300);
    expect((await call(t, 'GET', '/api/authorize.php', { query: { ...authorize, redirect_uri: 'http://localhost:9999/other' }, headers: { accept: 'application/json' } })).status).toBe(400);
    expect((await call(t, 'GET', '/api/authorize.php', { query: { ...authorize, client_id: 'nobody' }, headers: { accept: 'application/json' } })).status).toBe(401);
    expect((await call(t, 'GET', '/api/authorize.php', { query: { ...authorize, redirect_uri: 'http://localhost:9999/other' } })).headers.get('content-type')).toMatch(/^text\/html/);

    const user = await createUser(t);
    const redirect = await new Browser(t.baseUrl).authorize(client, user, { state: 's' });
    expect(redirect.searchParams.get('iss')).toBe(t.baseUrl);
    const code = redirect.searchParams.get('code')!;

    // client_secret_post
    const form = { code, client_id: client.client_id, client_secret: client.client_secret };
    const tokens = await call(t, 'POST', '/api/token.php', { form });
    expect(tokens.status).toBe(200);
    const { access_token, refresh_token } = tokens.body as { access_token: string; refresh_token: string };
    expect((tokens.body as Json).token_type).toBe('Bearer');

    // client_secret_basic refresh, then its reuse
    const refresh = { grant_type: 'refresh_token', refresh_token };
    const refreshed = await call(t, 'POST', '/api/token.php', { form: refresh, headers: { authorization: basicAuth(client) } });
    expect(refreshed.status).toBe(200);
    const next = refreshed.body as { access_token: string; refresh_token: string };

    const info = await call(t, 'GET', '/api/userinfo.php', { headers: { authorization: `Bearer ${next.access_token}` } });
    expect(info.status).toBe(200);

    const introspected = await call(t, 'POST', '/api/introspect.php', { form: { token: next.access_token }, headers: { authorization: basicAuth(client) } });
    expect((introspected.body as Json).active).toBe(true);
    expect(((await call(t, 'POST', '/api/introspect.php', { form: { token: 'unknown' }, headers: { authorization: basicAuth(client) } })).body as Json).active).toBe(false);
    expect((await call(t, 'POST', '/api/revoke.php', { form: { token: next.refresh_token, client_id: client.client_id, client_secret: client.client_secret } })).status).toBe(200);
    expect((await call(t, 'POST', '/api/revoke.php', { form: { token: 'x', client_id: client.client_id, client_secret: 'wrong' } })).status).toBe(401);
    expect(((await call(t, 'POST', '/api/introspect.php', { form: {}, headers: { authorization: basicAuth(client) } })).body as Json).error).toBe('invalid_request');

    // Each kind of error, each against the document.
    const errorOf = async (res: Promise<Live>) => ((await res).body as Json).error;
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form }))).toBe('invalid_code'); // the code, a second time
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: refresh, headers: { authorization: basicAuth(client) } }))).toBe('invalid_grant');
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: { ...form, client_secret: 'wrong' } }))).toBe('invalid_client');
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: { client_id: client.client_id, client_secret: client.client_secret } }))).toBe('invalid_request');
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: { grant_type: 'password', username: 'a', password: 'b' }, headers: { authorization: basicAuth(client) } }))).toBe('unsupported_grant_type');
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: { code: 'x' } }))).toBe('invalid_request');
    expect(await errorOf(call(t, 'GET', '/api/userinfo.php', { headers: { authorization: `Bearer ${access_token}` } }))).toBe('invalid_token');
    expect(await errorOf(call(t, 'GET', '/api/userinfo.php'))).toBe('invalid_token');
  });

  test('RFC 7591 registration, a public client with PKCE, a resource\'s JWT (introspection, revocation), invalid_target', async () => {
    const refused = await call(t, 'POST', '/api/register.php', { json: { redirect_uris: ['http://app.example/cb'] } });
    expect((refused.body as Json).error).toBe('invalid_redirect_uri');
    expect((await call(t, 'POST', '/api/register.php', { json: { redirect_uris: ['https://app.example/cb'], grant_types: ['password'] } })).status).toBe(400);
    expect((await call(t, 'POST', '/api/register.php', { json: { redirect_uris: ['https://app.example/cb'] } })).status).toBe(201);
    const registered = await call(t, 'POST', '/api/register.php', { json: { redirect_uris: ['http://127.0.0.1:9999/cb'], token_endpoint_auth_method: 'none' } });
    expect(registered.status).toBe(201);
    const publicClient = { client_id: (registered.body as Json).client_id as string, client_secret: '', redirect_uri: 'http://127.0.0.1:9999/cb' };

    const resource = 'https://api.example/docs';
    await t.app.db.prisma.resourceServer.create({ data: { uri: resource, name: 'Docs API', scopes: ['docs:read'], accessTokenTtl: 60 } });
    const user = await createUser(t);
    const pkce = pkcePair();
    const redirect = await new Browser(t.baseUrl).authorize(publicClient, user, { resource, ...pkceParams(pkce) });
    const form = { code: redirect.searchParams.get('code')!, client_id: publicClient.client_id, code_verifier: pkce.verifier, resource };
    const tokens = await call(t, 'POST', '/api/token.php', { form });
    expect(tokens.status).toBe(200);
    const jwt = (tokens.body as Json).access_token as string;
    const spec = await registerClient(t);
    expect(((await call(t, 'POST', '/api/introspect.php', { form: { token: jwt }, headers: { authorization: basicAuth(spec) } })).body as Json).active).toBe(false);
    expect(((await call(t, 'POST', '/api/revoke.php', { form: { token: jwt, client_id: publicClient.client_id } })).body as Json).error).toBe('unsupported_token_type');

    const denied = await new Browser(t.baseUrl).authorize(spec, user, { resource: 'https://nobody.example/' });
    expect(denied.searchParams.get('error')).toBe('invalid_target');
    const code = (await new Browser(t.baseUrl).authorize(spec, user, { resource })).searchParams.get('code')!;
    expect(((await call(t, 'POST', '/api/token.php', { form: { code, client_id: spec.client_id, client_secret: spec.client_secret, resource: 'https://nobody.example/' } })).body as Json).error).toBe('invalid_target');
  });

  test('machine clients: RFC 7591 without redirect URIs, client_credentials with a secret and with an assertion, its refusals', async () => {
    const machine = await call(t, 'POST', '/api/register.php', { json: { client_name: 'Machine', grant_types: ['client_credentials'] } });
    expect(machine.status).toBe(201);
    const secretClient = { ...(machine.body as { client_id: string; client_secret: string }), redirect_uri: '' };
    const key = await makeKey('ES256');
    const signer = await call(t, 'POST', '/api/register.php', { json: { grant_types: ['client_credentials', 'urn:ietf:params:oauth:grant-type:jwt-bearer'], token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) } });
    expect(signer.status).toBe(201);
    const signerId = (signer.body as Json).client_id as string;
    const resource = 'https://api.example/machines';
    await t.app.db.prisma.resourceServer.create({ data: { uri: resource, name: 'Machines API', scopes: ['jobs:run'], accessTokenTtl: 60 } });
    const cc = { grant_type: 'client_credentials', resource };
    expect((await call(t, 'POST', '/api/token.php', { form: cc, headers: { authorization: basicAuth(secretClient) } })).status).toBe(200);
    const signed = await call(t, 'POST', '/api/token.php', { form: { ...cc, ...assertionForm(await signAssertion(key, { client: signerId, audience: t.baseUrl })) } });
    expect(signed.status).toBe(200);
    expect(((await call(t, 'POST', '/api/introspect.php', { form: { token: (signed.body as Json).access_token as string, ...assertionForm(await signAssertion(key, { client: signerId, audience: t.baseUrl })) } })).body as Json).active).toBe(true);
    const errorOf = async (res: Promise<Live>) => ((await res).body as Json).error;
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: { grant_type: 'client_credentials' }, headers: { authorization: basicAuth(secretClient) } }))).toBe('invalid_target');
    const spec = await registerClient(t);
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: cc, headers: { authorization: basicAuth(spec) } }))).toBe('unauthorized_client');
    expect(await errorOf(call(t, 'POST', '/api/token.php', { form: { ...cc, ...assertionForm(await signAssertion(key, { client: signerId, audience: 'https://elsewhere.example' })) } }))).toBe('invalid_client');
    expect(await errorOf(call(t, 'POST', '/api/register.php', { json: { grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_jwt' } }))).toBe('invalid_client_metadata');
  });

  test('RP-initiated logout: the page, a form posted to it, and its error pages', async () => {
    const client = await registerClient(t);
    expect((await call(t, 'GET', ROUTES.end_session, { query: { client_id: client.client_id, state: 's' } })).status).toBe(200);
    const posted = await call(t, 'POST', ROUTES.end_session, { form: { client_id: client.client_id, state: 's t' } });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')).toBe(`${ROUTES.end_session}?client_id=${client.client_id}&state=s+t`);
    expect((await call(t, 'POST', ROUTES.end_session, { json: { client_id: client.client_id } })).status).toBe(400);
    expect((await call(t, 'GET', ROUTES.end_session, { query: { id_token_hint: 'not-a-jwt' } })).status).toBe(400);
    expect((await call(t, 'GET', ROUTES.end_session, { query: { client_id: client.client_id, post_logout_redirect_uri: 'https://elsewhere.example/' } })).status).toBe(400);
    expect((await call(t, 'GET', ROUTES.end_session, { query: { client_id: 'nobody' } })).status).toBe(401);
  });

  test('the settings, applications and forgot-password pages', async () => {
    for (const path of ['/api/settings.php', '/api/applications.php']) {
      expect((await call(t, 'GET', path)).headers.get('content-type')).toMatch(/^text\/html/);
      expect((await call(t, 'POST', path, { query: { action: 'sign_in' }, form: { action: 'sign_in', _csrf: 'forged' } })).status).toBe(403);
    }
  });

  test('the webhooks API', async () => {
    const client = await registerClient(t);
    const auth = { authorization: basicAuth(client) };
    // Every POST is JSON, even without a body (a form cannot be sent across sites with it).
    const json = { ...auth, 'content-type': 'application/json' };
    const added = await call(t, 'POST', '/api/webhooks.php', { json: { url: 'http://127.0.0.1:9/hook', events: ['token.issued'] }, headers: auth });
    expect(added.status).toBe(201);
    const id = (added.body as Json).id as string;
    expect((await call(t, 'GET', '/api/webhooks.php', { headers: auth })).status).toBe(200);
    expect((await call(t, 'GET', '/api/webhooks.php', { query: { id }, headers: auth })).status).toBe(200);
    expect((await call(t, 'POST', '/api/webhooks.php', { query: { id, action: 'test' }, headers: auth })).status).toBe(400);
    expect((await call(t, 'POST', '/api/webhooks.php', { query: { id, action: 'test' }, headers: json })).status).toBe(202);
    expect((await call(t, 'GET', '/api/webhooks.php', { query: { id, action: 'deliveries' }, headers: auth })).status).toBe(200);
    expect((await call(t, 'POST', '/api/webhooks.php', { query: { id, action: 'disable' }, headers: json })).status).toBe(200);
    const rotated = await call(t, 'POST', '/api/webhooks.php', { query: { id, action: 'rotate_secret', grace: '1h' }, headers: json });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ id, secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: expect.any(String) });
    expect((await call(t, 'POST', '/api/webhooks.php', { query: { id, action: 'rotate_secret', grace: 'forever' }, headers: json })).status).toBe(400);
    expect((await call(t, 'POST', '/api/webhooks.php', { query: { id: 'ep_unknown', action: 'rotate_secret' }, headers: json })).status).toBe(404);
    expect((await call(t, 'POST', '/api/webhooks.php', { json: { url: 'http://127.0.0.1:9/hook', events: ['no.such'] }, headers: auth })).status).toBe(400);
    expect((await call(t, 'GET', '/api/webhooks.php', { query: { id: 'ep_unknown' }, headers: auth })).status).toBe(404);
    expect((await call(t, 'GET', '/api/webhooks.php')).status).toBe(401);
    expect((await call(t, 'DELETE', '/api/webhooks.php', { query: { id }, headers: auth })).status).toBe(204);
  });
});

describe('limits', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1' } }); });
  afterAll(async () => { await t?.close(); });

  test('429 too_many_requests with Retry-After is documented', async () => {
    const form = { code: 'x', client_id: 'a', client_secret: 'b' };
    await call(t, 'POST', '/api/token.php', { form });
    const limited = await call(t, 'POST', '/api/token.php', { form });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

describe('store down, and shutdown', () => {
  let postgres: PostgresServer;
  let t: TestApp;
  beforeAll(async () => {
    postgres = await startPostgresServer();
    t = await startTestApp({
      mode: 'embedded', // no shared database: DATABASE_URL names the private cluster
      env: { DATABASE_URL: postgres.url },
      log: () => {}, // the background jobs' complaints while the database is down are expected
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close({ keepData: true });
    await postgres?.stop();
  }, 60_000);

  test('503 temporarily_unavailable with Retry-After, readiness 503 and stopping are documented', async () => {
    const client = await registerClient(t);
    const { access_token } = await obtainTokens(t, client, await createUser(t));
    await postgres.kill(); // tokens, clients and users live in PostgreSQL
    const checks: [string, string, Parameters<typeof call>[3]][] = [
      ['GET', '/api/userinfo.php', { headers: { authorization: `Bearer ${access_token}` } }],
      ['POST', '/api/token.php', { form: { code: 'x'.repeat(43), client_id: client.client_id, client_secret: client.client_secret } }],
      ['GET', '/api/webhooks.php', { headers: { authorization: basicAuth(client) } }],
      ['POST', '/api/register.php', { json: { client_name: 'Down', redirect_uri: 'http://localhost:9999/cb' } }],
    ];
    for (const [method, path, init] of checks) {
      const res = await call(t, method, path, init);
      expect({ path, status: res.status, error: (res.body as Json).error }).toEqual({ path, status: 503, error: 'temporarily_unavailable' });
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    expect(((await call(t, 'GET', '/healthz/ready')).body as Json).failing).toEqual(['database']);
    expect((await call(t, 'GET', '/healthz/live')).status).toBe(200);
    t.app.startDraining();
    expect(((await call(t, 'GET', '/healthz/ready')).body as Json).status).toBe('stopping');
  }, 60_000);
});
