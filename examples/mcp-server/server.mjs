#!/usr/bin/env node
/**
 * A minimal MCP server (the official SDK's server, streamable HTTP) protected by the OAuth
 * service, as the MCP authorization spec asks of a resource server:
 * - RFC 9728 metadata at /.well-known/oauth-protected-resource (and at the path-derived
 *   /.well-known/oauth-protected-resource/mcp), naming the service as its authorization server;
 * - a request without a valid token gets 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
 *   (and, with `challengeScope`, the scope to ask for first: MCP 2025-11-25's least privilege,
 *   clients then use it instead of every scope the metadata lists); one whose token lacks a
 *   scope gets 403 `insufficient_scope` naming the scopes to ask for: those the token holds and
 *   the one needed, so that a client authorizing again for them loses nothing (a step-up);
 * - tokens are RFC 9068 JWTs checked offline with `jose` against the service's JWKS: issuer,
 *   audience (this server's resource URI), `typ: at+jwt`, expiry and scope (`tools:read` for
 *   everything, `tools:call` to call a tool);
 * - one tool, `whoami`: who the token speaks for.
 *
 * Environment: AUTH_SERVER (the service's issuer, default http://localhost:3000), MCP_PORT
 * (3001), MCP_HOST (127.0.0.1), MCP_RESOURCE (default http://localhost:<MCP_PORT>/mcp; declare
 * the same URI at the service: RESOURCES or resources:add), MCP_CHALLENGE_SCOPE (unset: the 401
 * names no scope). See README.md beside this file.
 *
 * @example node examples/mcp-server/server.mjs
 */
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const MCP_PATH = '/mcp';
const SCOPES = ['tools:read', 'tools:call'];
const METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The MCP server for one request (stateless: no session outlives its request). */
function mcpServer() {
  const server = new McpServer({ name: 'oauth-service-example', version: '1.0.0' });
  server.registerTool('whoami', {
    description: 'Who the access token speaks for: the user (sub), the client and the scopes granted',
  }, async (extra) => ({ // a tool without input gets only the request's context
    content: [{ type: 'text', text: JSON.stringify({ sub: extra.authInfo?.extra?.sub, client_id: extra.authInfo?.clientId, scopes: extra.authInfo?.scopes }) }],
  }));
  return server;
}

async function readJson(req) {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 1_000_000) throw new Error('request body too large');
  }
  return text ? JSON.parse(text) : undefined;
}

/** The scope a JSON-RPC message needs: calling a tool needs tools:call, anything else tools:read. */
const neededScope = (body) => ([body].flat().some((message) => message?.method === 'tools/call') ? 'tools:call' : 'tools:read');

/**
 * Starts the server. `resource` (where clients connect, and the `aud` its tokens must carry)
 * defaults to http://localhost:<port>/mcp once the port is known. Resolves to it and close().
 */
export async function startMcpServer({ issuer, port = 3001, host = '127.0.0.1', resource, challengeScope } = {}) {
  // The service's RFC 8414 metadata names its JWKS; keys are fetched once, then as `kid`s change.
  const metadata = await (await fetch(new URL('/.well-known/oauth-authorization-server', issuer))).json();
  const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
  let origin;
  const resourceUri = () => resource ?? `${origin}${MCP_PATH}`;
  const metadataUrl = () => `${new URL(resourceUri()).origin}${METADATA_PATH}`;

  const challenge = (res, status, params) => {
    const fields = Object.entries({ ...params, resource_metadata: metadataUrl() }).map(([name, value]) => `${name}="${value}"`).join(', ');
    res.writeHead(status, { 'www-authenticate': `Bearer ${fields}`, 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: params.error ?? 'invalid_token', error_description: params.error_description ?? 'a bearer token is required' }));
  };

  /** The verified token as the SDK's AuthInfo, or undefined after answering 401. */
  async function authenticate(req, res) {
    const token = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return challenge(res, 401, challengeScope ? { scope: challengeScope } : {});
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer: metadata.issuer, audience: resourceUri(), typ: 'at+jwt' });
      return { token, clientId: payload.client_id, scopes: String(payload.scope ?? '').split(' ').filter(Boolean), expiresAt: payload.exp, extra: { sub: payload.sub } };
    } catch (error) {
      return challenge(res, 401, { error: 'invalid_token', error_description: `the access token is not valid here: ${String(error.message).replace(/"/g, "'")}` });
    }
  }

  const server = http.createServer(async (req, res) => {
    try {
      const { pathname } = new URL(req.url ?? '/', 'http://localhost');
      if (req.method === 'GET' && (pathname === METADATA_PATH || pathname === `${METADATA_PATH}${MCP_PATH}`)) {
        res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
        return res.end(JSON.stringify({
          resource: resourceUri(), authorization_servers: [metadata.issuer], scopes_supported: SCOPES,
          bearer_methods_supported: ['header'], resource_name: 'oauth-service example MCP server',
        }));
      }
      if (pathname !== MCP_PATH) return res.writeHead(404).end();
      const auth = await authenticate(req, res);
      if (!auth) return undefined;
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      const needed = neededScope(body);
      if (!auth.scopes.includes(needed)) {
        const scope = [...auth.scopes, needed].join(' '); // what it holds, and what it lacks
        return challenge(res, 403, { error: 'insufficient_scope', scope, error_description: `this needs the ${needed} scope` });
      }
      req.auth = auth; // the SDK hands it to tools as extra.authInfo
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const mcp = mcpServer();
      res.on('close', () => { void transport.close(); void mcp.close(); });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_request', error_description: error.message }));
    }
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  origin = `http://${host === '127.0.0.1' ? 'localhost' : host}:${server.address().port}`;
  return {
    /** Where MCP clients connect: the resource URI itself. */
    resource: resourceUri(),
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const issuer = process.env.AUTH_SERVER ?? 'http://localhost:3000';
  const port = Number(process.env.MCP_PORT ?? 3001);
  const started = await startMcpServer({ issuer, port, host: process.env.MCP_HOST ?? '127.0.0.1', resource: process.env.MCP_RESOURCE, challengeScope: process.env.MCP_CHALLENGE_SCOPE });
  console.log(`MCP server at ${started.resource}: tokens from ${issuer} for this resource (scopes ${SCOPES.join(', ')})`);
  const stop = () => started.close().then(() => process.exit(0));
  process.on('SIGINT', stop).on('SIGTERM', stop);
}
