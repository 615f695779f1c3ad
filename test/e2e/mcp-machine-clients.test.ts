/**
 * The MCP SDK's own machine providers (@modelcontextprotocol/sdk `client/auth-extensions`, nothing
 * of ours) against examples/mcp-server: ClientCredentialsProvider (a secret, HTTP Basic) and
 * PrivateKeyJwtProvider (an assertion without client_id or kid) get a token for the server
 * through its 401 (RFC 9728, RFC 8414), the token endpoint's client_credentials grant and
 * `resource`, and call its tool as themselves (`sub` the client).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { exportPKCS8 } from 'jose';
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startMcpServer } from '../../examples/mcp-server/server.mjs';
import type { StartedMcpServer } from '../../examples/mcp-server/server.mjs';
import { jwksOf, makeKey } from '../helpers/client-keys.js';
import { registerDynamicClient } from '../helpers/fixtures.js';
import { freePort } from '../helpers/services.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const SCOPES = 'tools:read tools:call';

async function whoami(client: Client) {
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  return JSON.parse((result.content as { text: string }[])[0]!.text) as { sub: string; client_id: string; scopes: string[] };
}

/** An SDK client connected to `url` with `authProvider` (a machine's: it gets its token without anyone). */
async function connected(url: string, authProvider: OAuthClientProvider): Promise<Client> {
  const client = new Client({ name: 'mcp-machine', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider }));
  return client;
}

let t: TestApp;
let mcp: StartedMcpServer;
beforeAll(async () => {
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  t = await startTestApp({ env: { REGISTRATION_CLIENT_CREDENTIALS: 'true', RESOURCES: JSON.stringify([{ uri: resource, scopes: SCOPES, name: 'Example MCP server' }]) } });
  mcp = await startMcpServer({ issuer: t.baseUrl, port, resource });
});
afterAll(async () => {
  await mcp?.close();
  await t?.close();
});

describe('the MCP SDK\'s machine providers', () => {
  test('ClientCredentialsProvider (client_secret_basic): a token for the server, a tool called as the client', async () => {
    const registered = await registerDynamicClient(t, { client_name: 'sdk-machine', redirect_uris: [], grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' });
    const provider = new ClientCredentialsProvider({ clientId: registered.client_id, clientSecret: registered.client_secret!, expectedIssuer: t.baseUrl });
    const client = await connected(mcp.resource, provider);
    expect(await whoami(client)).toEqual({ sub: registered.client_id, client_id: registered.client_id, scopes: ['tools:read', 'tools:call'] });
    await client.close();
    expect(provider.tokens()!.token_type).toBe('Bearer');
  });

  test('PrivateKeyJwtProvider (private_key_jwt, RS256, no kid, no client_id): a token for the server, a tool called as the client', async () => {
    const key = await makeKey('RS256');
    const registered = await registerDynamicClient(t, { client_name: 'sdk-signer', grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) });
    expect(registered).not.toHaveProperty('client_secret');
    const provider = new PrivateKeyJwtProvider({ clientId: registered.client_id, privateKey: await exportPKCS8(key.privateKey as never), algorithm: 'RS256', expectedIssuer: t.baseUrl });
    const client = await connected(mcp.resource, provider);
    expect(await whoami(client)).toEqual({ sub: registered.client_id, client_id: registered.client_id, scopes: ['tools:read', 'tools:call'] });
    await client.close();
  });
});
