/**
 * The official MCP SDK's client as an MCP host uses it: a StreamableHTTPClientTransport with an
 * in-memory OAuthClientProvider (what a desktop or editor client keeps in its own storage). The
 * SDK does discovery, registration (RFC 7591, or a Client ID Metadata Document URL), PKCE, the
 * token exchange and refreshes; the browser part (login and consent) is walked by the test's
 * Browser, as a person would at the URL the SDK opens.
 *
 * @example const mcp = new McpHost({ redirectUrl }); const client = await mcp.connect(serverUrl, (url) => new Browser(base).authorizeAt(url, user));
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** What an MCP host keeps per server, in memory. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** Where the SDK sent the user last (the authorization URL). */
  authorizationUrl: URL | undefined;

  constructor(readonly redirectUrl: string, readonly clientMetadataUrl?: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP test host', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none',
    };
  }

  clientInformation() { return this.client; }
  saveClientInformation(information: OAuthClientInformationMixed) { this.client = information; }
  tokens() { return this.saved; }
  saveTokens(tokens: OAuthTokens) { this.saved = tokens; }
  redirectToAuthorization(url: URL) { this.authorizationUrl = url; }
  saveCodeVerifier(verifier: string) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
}

/**
 * Connects an SDK client to `serverUrl`; when the server asks for authorization, `authorize` is
 * given the URL the SDK opens and returns the redirect back (carrying `code`), which the
 * transport's finishAuth exchanges; then it connects again, authorized.
 */
export async function connectMcp(serverUrl: string, provider: MemoryOAuthProvider, authorize: (url: URL) => Promise<URL>): Promise<Client> {
  const attempt = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
    const client = new Client({ name: 'mcp-test-host', version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
  };
  try {
    return (await attempt()).client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError) || !provider.authorizationUrl) throw error;
  }
  const redirect = await authorize(provider.authorizationUrl);
  const code = redirect.searchParams.get('code');
  if (!code) throw new Error(`the authorization ended without a code: ${redirect}`);
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
  await transport.finishAuth(code);
  return (await attempt()).client;
}
