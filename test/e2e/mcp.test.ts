/**
 * An MCP host built on the official SDK (@modelcontextprotocol/sdk: StreamableHTTPClientTransport
 * with an in-memory OAuthClientProvider, nothing of ours) reaches examples/mcp-server through
 * discovery (RFC 9728, then RFC 8414) → registration (RFC 7591; or its Client ID Metadata
 * Document, served over https on loopback) → authorization with PKCE and `resource` (the test's
 * browser walks login and consent) → token → a tool call → refresh. The example checks the JWT
 * offline: a token for another resource, or without the tool scope, is refused.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { startMcpServer } from '../../examples/mcp-server/server.mjs';
import type { StartedMcpServer } from '../../examples/mcp-server/server.mjs';
import { ROOT } from '../helpers/build.js';
import { Browser } from '../helpers/browser.js';
import type { TestUser } from '../helpers/browser.js';
import { startDocumentServer } from '../helpers/document-server.js';
import type { DocumentServer } from '../helpers/document-server.js';
import { createUser, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { connectMcp, MemoryOAuthProvider } from '../helpers/mcp-client.js';
import { freePort } from '../helpers/services.js';
import { startServiceProcess } from '../helpers/service-process.js';
import type { ServiceProcess } from '../helpers/service-process.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';
import { describeWithOpenssl, makeCertificates } from '../helpers/tls.js';
import type { Certificates } from '../helpers/tls.js';

const REDIRECT = 'http://127.0.0.1:47123/oauth/callback'; // where the host would listen; the browser stops at the redirect
const SCOPES = 'tools:read tools:call';

/** The whoami tool's answer. */
async function whoami(client: Awaited<ReturnType<typeof connectMcp>>) {
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  return JSON.parse((result.content as { text: string }[])[0]!.text) as { sub: string; client_id: string; scopes: string[] };
}

describe('MCP host (SDK) → example MCP server, registering with RFC 7591', () => {
  let t: TestApp;
  let user: TestUser;
  let mcp: StartedMcpServer;
  let resource: string;
  beforeAll(async () => {
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    t = await startTestApp({ env: { RESOURCES: JSON.stringify([{ uri: resource, scopes: SCOPES, name: 'Example MCP server' }]) } });
    user = await createUser(t);
    mcp = await startMcpServer({ issuer: t.baseUrl, port, resource });
  });
  afterAll(async () => {
    await mcp?.close();
    await t?.close();
  });

  test('discovery → registration → authorization → token → tool call → refresh', async () => {
    const provider = new MemoryOAuthProvider(REDIRECT);
    const browser = new Browser(t.baseUrl);
    const client = await connectMcp(resource, provider, (url) => browser.authorizeAt(url, user));

    // The SDK registered itself (RFC 7591) as a public client and asked for the resource.
    expect(provider.client).toMatchObject({ client_id: expect.any(String), redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    expect(provider.client).not.toHaveProperty('client_secret');
    expect(Object.fromEntries(provider.authorizationUrl!.searchParams)).toMatchObject({
      resource, scope: SCOPES, code_challenge_method: 'S256', client_id: provider.client!.client_id,
    });
    expect(browser.consentPage).toContain('This application registered itself with this service (RFC 7591)');
    expect(browser.consentPage).toContain('Example MCP server');

    const account = await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: user.username } });
    expect(await whoami(client)).toEqual({ sub: account.id, client_id: provider.client!.client_id, scopes: ['tools:read', 'tools:call'] });
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['whoami']);
    await client.close();

    // Refresh: auth() with a refresh token at hand rotates it and gets a new access token.
    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: resource })).toBe('AUTHORIZED');
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    const again = await connectMcp(resource, provider, () => { throw new Error('no second authorization expected'); });
    expect((await whoami(again)).sub).toBe(account.id);
    await again.close();
  });

  test('the example refuses a token for another resource, one without the tool scope, and none', async () => {
    const other = `${resource}-other`;
    await t.app.db.prisma.resourceServer.create({ data: { uri: other, name: 'Other', scopes: ['tools:read', 'tools:call'], accessTokenTtl: 600 } });
    const spec = await registerClient(t);
    const tokenFor = async (indicator: string, scope: string) => {
      const redirect = await new Browser(t.baseUrl).authorize(spec, user, { resource: indicator, scope });
      const res = await tokenRequest(t, { code: redirect.searchParams.get('code')!, client_id: spec.client_id, client_secret: spec.client_secret, resource: indicator });
      return res.body.access_token as string;
    };
    const call = (token?: string) => fetch(resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
    });
    const metadataUrl = `${new URL(resource).origin}/.well-known/oauth-protected-resource`;

    const none = await call();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    const elsewhere = await call(await tokenFor(other, SCOPES));
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", error_description="[^"]*aud[^"]*", resource_metadata=/);
    const readOnly = await call(await tokenFor(resource, 'tools:read'));
    expect(readOnly.status).toBe(403);
    expect(readOnly.headers.get('www-authenticate')).toMatch(/error="insufficient_scope", scope="tools:read tools:call"/);
    expect((await call(await tokenFor(resource, 'tools:call tools:read'))).status).toBe(200);

    const metadata = await (await fetch(metadataUrl)).json();
    expect(metadata).toEqual({
      resource, authorization_servers: [t.baseUrl], scopes_supported: ['tools:read', 'tools:call'], bearer_methods_supported: ['header'], resource_name: expect.any(String),
    });
    expect(await (await fetch(`${metadataUrl}/mcp`)).json()).toEqual(metadata);
  });
});

describeWithOpenssl('MCP host (SDK) → example MCP server, identified by a Client ID Metadata Document', () => {
  let tls: Certificates;
  let docs: DocumentServer;
  let service: ServiceProcess;
  let example: ChildProcess;
  let resource: string;
  beforeAll(async () => {
    tls = makeCertificates();
    docs = await startDocumentServer(tls);
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    service = await startServiceProcess({
      NODE_EXTRA_CA_CERTS: tls.caFile, CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true',
      RESOURCES: JSON.stringify([{ uri: resource, scopes: SCOPES, name: 'Example MCP server' }]),
    });
    // The example as its README starts it.
    example = spawn(process.execPath, ['examples/mcp-server/server.mjs'], {
      cwd: ROOT, env: { PATH: process.env.PATH, AUTH_SERVER: service.baseUrl, MCP_PORT: String(port), MCP_RESOURCE: resource }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      let output = '';
      example.stdout!.on('data', (chunk: Buffer) => { output += chunk; if (output.includes('MCP server at')) resolve(); });
      example.stderr!.on('data', (chunk: Buffer) => { output += chunk; });
      example.once('exit', (code) => reject(new Error(`the example exited (${code}): ${output}`)));
    });
  }, 180_000);
  afterAll(async () => {
    example?.kill('SIGTERM');
    await service?.close();
    await docs?.close();
    tls?.remove();
  });

  test('the SDK sends its metadata document URL as client_id; the flow, a tool call and a refresh work', async () => {
    const documentUrl = docs.url('/mcp-host.json');
    const provider = new MemoryOAuthProvider(REDIRECT, documentUrl);
    docs.route('/mcp-host.json', { body: { ...provider.clientMetadata, client_id: documentUrl, client_uri: 'https://host.example/' } });
    const browser = new Browser(service.baseUrl);
    const client = await connectMcp(resource, provider, (url) => browser.authorizeAt(url, service.user));

    expect(provider.client).toMatchObject({ client_id: documentUrl });
    expect(provider.authorizationUrl!.searchParams.get('client_id')).toBe(documentUrl);
    expect(browser.consentPage).toContain(`registered itself by publishing its description at ${documentUrl}`);
    expect((await whoami(client)).client_id).toBe(documentUrl);
    await client.close();

    expect(await auth(provider, { serverUrl: resource })).toBe('AUTHORIZED');
    const again = await connectMcp(resource, provider, () => { throw new Error('no second authorization expected'); });
    expect((await whoami(again)).scopes).toEqual(['tools:read', 'tools:call']);
    await again.close();
  });
});
