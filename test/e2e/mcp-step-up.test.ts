/**
 * A step-up through the MCP SDK's own client (@modelcontextprotocol/sdk, nothing of ours) against
 * examples/mcp-server, its 401 naming the least scope to ask for first (`tools:read`): a host
 * authorized for that calls a tool, is answered 403 `insufficient_scope` naming
 * `tools:read tools:call`, authorizes again through the SDK, and the user is asked only for
 * `tools:call`; the grant keeps both, and so does the token.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startMcpServer } from '../../examples/mcp-server/server.mjs';
import type { StartedMcpServer } from '../../examples/mcp-server/server.mjs';
import { Browser } from '../helpers/browser.js';
import type { TestUser } from '../helpers/browser.js';
import { createUser } from '../helpers/fixtures.js';
import { connectMcp, MemoryOAuthProvider } from '../helpers/mcp-client.js';
import { freePort } from '../helpers/services.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const SCOPES = 'tools:read tools:call';
const REDIRECT = 'http://127.0.0.1:47124/oauth/callback';

async function whoami(client: Client) {
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  return JSON.parse((result.content as { text: string }[])[0]!.text) as { sub: string; client_id: string; scopes: string[] };
}

let t: TestApp;
let leastPrivilege: StartedMcpServer;
beforeAll(async () => {
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  t = await startTestApp({ env: { RESOURCES: JSON.stringify([{ uri: resource, scopes: SCOPES, name: 'Example MCP server' }]) } });
  // The example as MCP_CHALLENGE_SCOPE=tools:read starts it: its 401 names the least a client should ask for first.
  leastPrivilege = await startMcpServer({ issuer: t.baseUrl, port, resource, challengeScope: 'tools:read' });
});
afterAll(async () => {
  await leastPrivilege?.close();
  await t?.close();
});

describe('a step-up through the SDK', () => {
  let user: TestUser;
  beforeAll(async () => { user = await createUser(t); });

  test('authorized for tools:read, a tool call is 403 insufficient_scope; the SDK asks again for both, the user is asked only for tools:call', async () => {
    // A host without refresh tokens: the SDK (1.32) refreshes instead of asking again when it holds one.
    const provider = new MemoryOAuthProvider(REDIRECT);
    Object.defineProperty(provider, 'clientMetadata', { value: { ...provider.clientMetadata, grant_types: ['authorization_code'] } });
    const browser = new Browser(t.baseUrl);
    const client = await connectMcp(leastPrivilege.resource, provider, (url) => browser.authorizeAt(url, user));
    expect(provider.authorizationUrl!.searchParams.get('scope')).toBe('tools:read');
    expect(provider.saved).not.toHaveProperty('refresh_token');
    expect(browser.consentPage).toContain('tools:read');
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['whoami']);

    // The call needs tools:call: the server says so, naming what the token holds and what it lacks.
    provider.authorizationUrl = undefined;
    browser.consentPage = undefined;
    await expect(whoami(client)).rejects.toThrow(/Unauthorized/);
    const again = provider.authorizationUrl!;
    expect(again.searchParams.get('scope')).toBe('tools:read tools:call');
    const back = await browser.authorizeAt(again, user);
    const consent = browser.consentPage!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
    expect(consent).toContain(`( ${leastPrivilege.resource} ): tools:call`);
    expect(consent).not.toContain('tools:read');
    await new StreamableHTTPClientTransport(new URL(leastPrivilege.resource), { authProvider: provider }).finishAuth(back.searchParams.get('code')!);
    await client.close();

    const stepped = await connectMcp(leastPrivilege.resource, provider, () => { throw new Error('no third authorization expected'); });
    expect((await whoami(stepped)).scopes).toEqual(['tools:read', 'tools:call']);
    await stepped.close();
    const grants = await t.app.db.prisma.oidcModel.findMany({ where: { type: 'Grant', payload: { path: ['clientId'], equals: provider.client!.client_id } } });
    expect(grants.map((grant) => (grant.payload as { resources: Record<string, string> }).resources)).toEqual([{ [leastPrivilege.resource]: SCOPES }]);
  });
});
