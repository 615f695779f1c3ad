/**
 * Operators' machine and key clients: `clients:create` with `--grant-types`, `--jwks-file`,
 * `--jwks-uri` (a client described by its metadata, checked as RFC 7591 registration checks it,
 * `client_credentials` always allowed), and `clients:set-jwks` (a client signs its assertions
 * with these keys from now on; its secrets end). Run as operators run them (DATABASE_URL) while
 * the service runs; audited as the operator; a bad value changes nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateKeyPair, exportJWK } from 'jose';
import { Browser } from '../helpers/browser.js';
import { assertionForm, jwksOf, makeKey, signAssertion } from '../helpers/client-keys.js';
import type { TestKey } from '../helpers/client-keys.js';
import { expectCleanFailure, expectSuccess, serviceWithCli } from '../helpers/cli.js';
import type { ServiceWithCli } from '../helpers/cli.js';
import { basicAuth, createUser, expectErrorResponse, tokenRequest } from '../helpers/fixtures.js';
import { webhooksApi } from '../helpers/receiver.js';
import type { TestApp } from '../helpers/test-app.js';

const TOOLS = 'https://tools.example/mcp';
const service = serviceWithCli({ RESOURCES: JSON.stringify([{ uri: TOOLS, scopes: 'tools:read' }]) });
let t: TestApp;
let cli: ServiceWithCli['cli'];
let dir: string;
let key: TestKey;
let keysFile: string;
beforeAll(async () => {
  ({ t, cli } = service);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'client-keys-'));
  key = await makeKey('ES256', 'ops-1');
  keysFile = path.join(dir, 'keys.json');
  fs.writeFileSync(keysFile, JSON.stringify(jwksOf(key)));
});
afterAll(() => { fs.rmSync(dir, { recursive: true, force: true }); });

const CLI_TIMEOUT = 120_000;
const machineToken = (form: Record<string, string>, headers: Record<string, string> = {}) => tokenRequest(t, { grant_type: 'client_credentials', resource: TOOLS, ...form }, headers);

describe('clients:create, described', () => {
  test('--grant-types client_credentials: a machine client with a secret, no redirect URI; it gets tokens; audited as the operator', async () => {
    const created = JSON.parse(expectSuccess(await cli(['clients:create', '--name', 'Nightly sync', '--grant-types', 'client_credentials', '--json'])).stdout) as Record<string, unknown>;
    expect(created).toMatchObject({ client_name: 'Nightly sync', redirect_uri: null, token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], client_secret: expect.any(String) });
    const client = { client_id: created.client_id as string, client_secret: created.client_secret as string, redirect_uri: '' };
    expect((await machineToken({}, { authorization: basicAuth(client) })).status).toBe(200);
    const row = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: client.client_id, event: 'client.registered' } });
    expect(row).toMatchObject({ actor: 'operator', detail: expect.objectContaining({ registration: 'operator', grant_types: ['client_credentials'] }) });
    expect(expectSuccess(await cli(['clients:show', client.client_id])).stdout).toMatch(/^redirect_uri\s+none \(client_credentials only\)$/m);
  }, CLI_TIMEOUT);

  test('--jwks-file: a private_key_jwt client, no secret printed; its assertions get tokens, no secret does', async () => {
    const created = expectSuccess(await cli(['clients:create', '--name', 'Signer', '--grant-types', 'client_credentials', '--jwks-file', keysFile]));
    expect(created.stdout).toMatch(/authenticates with assertions signed by its keys \(private_key_jwt\); it has no secret/);
    const clientId = /created client "Signer" \(([\w-]+)\)/.exec(created.stdout)![1]!;
    expect((await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId } })).clientSecretHash).toBeNull();
    expect((await machineToken(assertionForm(await signAssertion(key, { client: clientId, audience: t.baseUrl })))).status).toBe(200);
    expectErrorResponse(await machineToken({ client_id: clientId, client_secret: 'anything' }), 401, 'invalid_client');
  }, CLI_TIMEOUT);

  test('--redirect-uri with --jwks-uri: the code flow and refresh tokens, keys at a URL', async () => {
    const created = JSON.parse(expectSuccess(await cli(['clients:create', '--name', 'Web', '--redirect-uri', 'https://web.example/cb', '--jwks-uri', 'https://web.example/jwks.json', '--json'])).stdout) as Record<string, unknown>;
    expect(created).toMatchObject({ redirect_uri: 'https://web.example/cb', token_endpoint_auth_method: 'private_key_jwt', grant_types: ['authorization_code', 'refresh_token'], jwks_uri: 'https://web.example/jwks.json' });
    expect(created).not.toHaveProperty('client_secret');
  }, CLI_TIMEOUT);

  test('bad keys, grant types or options: clean failures, nothing created', async () => {
    const count = await t.app.db.prisma.client.count();
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const leaked = path.join(dir, 'private.json');
    fs.writeFileSync(leaked, JSON.stringify({ keys: [await exportJWK(privateKey)] }));
    const notJson = path.join(dir, 'keys.txt');
    fs.writeFileSync(notJson, 'not json');
    expectCleanFailure(await cli(['clients:create', '--name', 'Leak', '--grant-types', 'client_credentials', '--jwks-file', leaked]), /private or secret member/, 1);
    expectCleanFailure(await cli(['clients:create', '--name', 'Text', '--grant-types', 'client_credentials', '--jwks-file', notJson]), /is not JSON/, 1);
    expectCleanFailure(await cli(['clients:create', '--name', 'Gone', '--grant-types', 'client_credentials', '--jwks-file', path.join(dir, 'missing.json')]), /cannot be read/, 1);
    expectCleanFailure(await cli(['clients:create', '--name', 'Plain', '--grant-types', 'client_credentials', '--jwks-uri', 'http://keys.example/jwks.json']), /jwks_uri must be an https URL/, 1);
    expectCleanFailure(await cli(['clients:create', '--name', 'Both', '--grant-types', 'client_credentials', '--jwks-uri', 'https://keys.example/jwks.json', '--jwks-file', keysFile]), /exactly one of jwks and jwks_uri/, 1);
    expectCleanFailure(await cli(['clients:create', '--name', 'Nothing', '--grant-types', 'password']), /nothing this service offers remains/, 1);
    expect(await t.app.db.prisma.client.count()).toBe(count);
  }, CLI_TIMEOUT);
});

describe('clients:set-jwks', () => {
  test('an operator\'s client in the spec\'s shape signs with its keys from now on: its secret ends, and its settings page with it; audited', async () => {
    const created = JSON.parse(expectSuccess(await cli(['clients:create', '--name', 'Portal', '--redirect-uri', 'https://portal.example/cb', '--json'])).stdout) as { client_id: string; client_secret: string };
    const client = { client_id: created.client_id, client_secret: created.client_secret, redirect_uri: 'https://portal.example/cb' };
    expect((await webhooksApi(t.baseUrl, client)).status).toBe(200);

    const set = expectSuccess(await cli(['clients:set-jwks', client.client_id, '--jwks-file', keysFile]));
    expect(set.stdout).toMatch(/now authenticates with assertions signed by the 1 key\(s\) of .* \(private_key_jwt\); it has no secret/);
    const user = await createUser(t);
    const code = async () => (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!;
    expectErrorResponse(await tokenRequest(t, { code: await code(), client_id: client.client_id, client_secret: client.client_secret }), 401, 'invalid_client');
    const exchanged = await tokenRequest(t, { code: await code(), ...assertionForm(await signAssertion(key, { client: client.client_id, audience: t.baseUrl })) });
    expect(exchanged.status).toBe(200);
    expect((await webhooksApi(t.baseUrl, client)).status).toBe(401);

    const row = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: client.client_id, event: 'client.updated' } });
    expect(row).toMatchObject({ actor: 'operator', detail: expect.objectContaining({ changed: ['token_endpoint_auth_method', 'jwks'] }) });
    expect(expectSuccess(await cli(['clients:set-jwks', client.client_id, '--jwks-file', keysFile])).stdout).toMatch(/used the 1 key\(s\) of .* already/);
    expect(expectSuccess(await cli(['clients:show', client.client_id])).stdout).toMatch(/^authenticates with\s+private_key_jwt$/m);
    expectCleanFailure(await cli(['clients:rotate-secret', client.client_id]), /has no secret to rotate/, 1);
  }, CLI_TIMEOUT);

  test('needs one of --jwks-file and --jwks-uri; an unknown client is refused', async () => {
    expectCleanFailure(await cli(['clients:set-jwks', 'nobody']), /one of --jwks-file and --jwks-uri/, 2);
    expectCleanFailure(await cli(['clients:set-jwks', 'nobody', '--jwks-uri', 'https://keys.example/jwks.json']), /no client "nobody"/, 1);
  }, CLI_TIMEOUT);
});
