/**
 * private_key_jwt client authentication (RFC 7523 §2.2, §3; RFC 7521 §4.2) at the token,
 * revocation and introspection endpoints, for a client registered with its keys inline (RFC 7591
 * `jwks`). An assertion may come without `client_id` and without `kid` (the MCP SDK's send
 * neither): the client is its `sub`, its key picked by algorithm. Every refusal is 401
 * `invalid_client`, its reason in the log line `client authentication refused`: a replayed `jti`
 * (on another instance too, and of a burst on two instances exactly one passes), an expired
 * assertion, one not yet valid, issued in the future or living too long, another audience,
 * another key, a symmetric algorithm, `iss` not `sub`. Malformed requests are 400
 * `invalid_request`. On PostgreSQL + Redis and embedded. (Keys at a `jwks_uri`, and metadata
 * documents, need https: test/clients/private-key-jwt-documents.test.ts.)
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { createLogger } from '../../src/ops/logger.js';
import { Browser } from '../helpers/browser.js';
import { assertionForm, jwksOf, makeKey, signAssertion } from '../helpers/client-keys.js';
import type { AssertionOptions, TestKey } from '../helpers/client-keys.js';
import { createUser, expectErrorResponse, postForm, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { secondInstance, startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const TOOLS = 'https://tools.example/mcp';
const REDIRECT = 'https://app.example/cb';
const ENV = { REGISTRATION_CLIENT_CREDENTIALS: 'true', RESOURCES: JSON.stringify([{ uri: TOOLS, scopes: 'tools:read tools:call' }]) };

/** Log lines, kept for the test to read. */
function capturedLog() {
  const chunks: string[] = [];
  return {
    logger: createLogger({ level: 'info', destination: { write: (chunk: string) => { chunks.push(chunk); } } as never }),
    refusals: () => chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'client authentication refused'),
  };
}

describe.each<Mode>(['postgres', 'embedded'])('private_key_jwt, keys registered inline (%s)', (mode) => {
  let t: TestApp;
  let log: ReturnType<typeof capturedLog>;
  let key: TestKey;
  let client: string;
  let machine: string;
  beforeAll(async () => {
    log = capturedLog();
    t = await startTestApp({ mode, env: ENV, logger: log.logger });
    key = await makeKey('RS256', 'key-1');
    // As the MCP SDK's PrivateKeyJwtProvider registers (client_credentials), and a code-flow client.
    machine = (await registerDynamicClient(t, { client_name: 'Machine', grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) })).client_id;
    client = (await registerDynamicClient(t, { client_name: 'Signed', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) })).client_id;
  }, 60_000);
  afterAll(async () => { await t?.close(); });

  const sign = (options: Partial<AssertionOptions> = {}, signer = key) => signAssertion(signer, { client: machine, audience: t.baseUrl, noKid: true, ...options });
  const machineToken = async (form: Record<string, string>) => tokenRequest(t, { grant_type: 'client_credentials', resource: TOOLS, ...form });

  test('registered: no secret, its keys as registered', async () => {
    const row = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: client } });
    expect(row).toMatchObject({ clientSecretHash: null, registration: 'rfc7591', metadata: expect.objectContaining({ token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) }) });
  });

  test('the code flow, refresh, introspection and revocation, each authenticated by a fresh assertion without client_id or kid', async () => {
    const user = await createUser(t);
    const redirect = await new Browser(t.baseUrl).authorize({ client_id: client, client_secret: '', redirect_uri: REDIRECT }, user);
    const code = redirect.searchParams.get('code')!;
    const exchanged = await tokenRequest(t, { code, redirect_uri: REDIRECT, ...assertionForm(await sign({ client })) });
    expect(exchanged.status).toBe(200);
    const tokens = exchanged.body as { access_token: string; refresh_token: string; id_token: string };
    expect(decodeJwt(tokens.id_token).aud).toBe(client);
    const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...assertionForm(await sign({ client })) });
    expect(refreshed.status).toBe(200);
    const { access_token: accessToken, refresh_token: refreshToken } = refreshed.body as { access_token: string; refresh_token: string };
    const introspected = await postForm(t, '/api/introspect.php', { token: accessToken, ...assertionForm(await sign({ client })) });
    expect(introspected.body).toMatchObject({ active: true, client_id: client, username: user.username });
    expect((await postForm(t, '/api/revoke.php', { token: refreshToken, ...assertionForm(await sign({ client })) })).status).toBe(200);
    expect((await postForm(t, '/api/introspect.php', { token: accessToken, ...assertionForm(await sign({ client })) })).body).toEqual({ active: false });
  });

  test('client_credentials with an assertion; its aud may be the token endpoint; a kid picks its key among several of other types', async () => {
    const res = await machineToken(assertionForm(await sign()));
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.access_token as string)).toMatchObject({ sub: machine, aud: TOOLS });
    expect((await machineToken(assertionForm(await sign({ audience: `${t.baseUrl}/api/token.php` })))).status).toBe(200);
    const [es, ed] = await Promise.all([makeKey('ES256', 'es'), makeKey('EdDSA', 'ed')]);
    const several = (await registerDynamicClient(t, { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key, es, ed) })).client_id;
    for (const signer of [es, ed, key]) {
      const kid = await signAssertion(signer, { client: several, audience: t.baseUrl });
      expect({ alg: signer.alg, status: (await machineToken(assertionForm(kid))).status }).toEqual({ alg: signer.alg, status: 200 });
    }
  });

  test.each<[string, () => Promise<string>, RegExp]>([
    ['expired', () => sign({ issuedIn: -400, expiresIn: -60 }), /expired/],
    ['not valid yet (nbf)', () => sign({ notBeforeIn: 120 }), /not active yet/],
    ['issued in the future (iat)', () => sign({ issuedIn: 120, expiresIn: 300 }), /iat/],
    ['living longer than an hour', () => sign({ expiresIn: 2 * 3600 }), /at most 3600 seconds/],
    ['for another audience', () => sign({ audience: 'https://elsewhere.example' }), /aud/],
    ['for the revocation endpoint, at the token endpoint', () => sign({ audience: `${t.baseUrl}/api/revoke.php` }), /aud/],
    ['signed with a key the client did not register', async () => sign({}, await makeKey('RS256')), /signature/],
    ['signed with a key the client did not register, naming its kid', async () => sign({ noKid: false }, await makeKey('RS256', 'key-1')), /signature/],
    ['with an issuer that is not its subject', () => sign({ claims: { iss: 'someone-else' } }), /iss/],
    ['without a jti', () => sign({ claims: { jti: undefined } }), /jti/],
    ['without exp', () => sign({ claims: { exp: undefined } }), /expiration/],
    ['HS256, keyed with a secret', async () => {
      const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      const unsigned = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode({ iss: machine, sub: machine, aud: t.baseUrl, iat: now, exp: now + 300, jti: `hs-${now}` })}`;
      return `${unsigned}.${createHmac('sha256', 'a shared secret').update(unsigned).digest('base64url')}`;
    }, /alg/],
  ])('an assertion %s: 401 invalid_client, its reason logged', async (_label, make, reason) => {
    const res = await machineToken(assertionForm(await make()));
    expectErrorResponse(res, 401, 'invalid_client');
    expect(log.refusals().at(-1)).toMatchObject({ endpoint: 'token', client_id: machine, detail: expect.stringMatching(reason) });
  });

  test('a replayed assertion: 401 invalid_client (its jti is remembered until it expires)', async () => {
    const assertion = await sign();
    expect((await machineToken(assertionForm(assertion))).status).toBe(200);
    expectErrorResponse(await machineToken(assertionForm(assertion)), 401, 'invalid_client');
    expect(log.refusals().at(-1)).toMatchObject({ detail: expect.stringMatching(/only be used once/) });
    // One jti spent at the token endpoint cannot authenticate elsewhere either.
    expectErrorResponse(await postForm(t, '/api/introspect.php', { token: 'x', ...assertionForm(assertion) }), 401, 'invalid_client');
  });

  test('one assertion sent 12 times at once: exactly one token', async () => {
    const assertion = await sign();
    const answers = await Promise.all(Array.from({ length: 12 }, () => machineToken(assertionForm(assertion))));
    expect(answers.map((res) => res.status).sort()).toEqual([200, ...Array(11).fill(401)]);
  });

  test('at introspection and revocation too, aud is the issuer or the token endpoint, not the endpoint called', async () => {
    expect((await postForm(t, '/api/introspect.php', { token: 'x', ...assertionForm(await sign({ audience: `${t.baseUrl}/api/token.php` })) })).body).toEqual({ active: false });
    expectErrorResponse(await postForm(t, '/api/introspect.php', { token: 'x', ...assertionForm(await sign({ audience: `${t.baseUrl}/api/introspect.php` })) }), 401, 'invalid_client');
    expectErrorResponse(await postForm(t, '/api/revoke.php', { token: 'x', ...assertionForm(await sign({ audience: `${t.baseUrl}/api/revoke.php` })) }), 401, 'invalid_client');
  });

  test('a secret is no credential for it; nothing at all is a missing client_assertion', async () => {
    expectErrorResponse(await machineToken({ client_id: machine, client_secret: 'anything' }), 401, 'invalid_client');
    const none = await machineToken({ client_id: machine });
    expectErrorResponse(none, 400, 'invalid_request');
    expect(none.body.error_description).toMatch(/client_assertion/);
  });

  test.each<[string, () => Promise<Record<string, string>>, RegExp]>([
    ['not a JWT', async () => assertionForm('not-a-jwt'), /client_assertion format/],
    ['another assertion type', async () => ({ ...assertionForm(await sign()), client_assertion_type: 'urn:example:saml' }), /client_assertion_type/],
    ['a client_id other than its sub', async () => ({ ...assertionForm(await sign()), client_id: 'someone-else' }), /client_id mismatch/],
    ['a secret beside it', async () => ({ ...assertionForm(await sign()), client_id: machine, client_secret: 'x' }), /only be provided using one mechanism/],
  ])('%s: 400 invalid_request', async (_label, form, description) => {
    const res = await machineToken(await form());
    expectErrorResponse(res, 400, 'invalid_request');
    expect(res.body.error_description).toMatch(description);
  });
});

describe('a jti across instances (one PostgreSQL, one Redis)', () => {
  let a: TestApp;
  let b: TestApp;
  let key: TestKey;
  let machine: string;
  beforeAll(async () => {
    a = await startTestApp({ env: ENV });
    b = await secondInstance(a);
    key = await makeKey('ES256');
    machine = (await registerDynamicClient(a, { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) })).client_id;
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const ask = (on: TestApp, assertion: string) => tokenRequest(on, { grant_type: 'client_credentials', resource: TOOLS, ...assertionForm(assertion) });

  test('used on A, refused on B', async () => {
    const assertion = await signAssertion(key, { client: machine, audience: a.baseUrl });
    expect((await ask(a, assertion)).status).toBe(200);
    expectErrorResponse(await ask(b, assertion), 401, 'invalid_client');
  });

  test('sent 12 times at once to both: exactly one token (5 rounds)', async () => {
    for (let round = 0; round < 5; round += 1) {
      const assertion = await signAssertion(key, { client: machine, audience: a.baseUrl });
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(i % 2 ? b : a, assertion)));
      expect({ round, granted: answers.filter((res) => res.status === 200).length }).toEqual({ round, granted: 1 });
      for (const res of answers.filter((r) => r.status !== 200)) expectErrorResponse(res, 401, 'invalid_client');
    }
  });
});
