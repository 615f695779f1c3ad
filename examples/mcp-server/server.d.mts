/** Types of server.mjs, for the tests that start it in-process. */
export interface McpServerOptions {
  /** The OAuth service's issuer (its base URL). */
  issuer: string;
  port?: number;
  host?: string;
  /** Where clients connect and the `aud` its tokens must carry; default http://localhost:<port>/mcp. */
  resource?: string;
  /** The scope a 401 challenge names (the least a client should ask for first); unset: none. */
  challengeScope?: string | undefined;
}

export interface StartedMcpServer {
  readonly resource: string;
  close(): Promise<void>;
}

export function startMcpServer(options: McpServerOptions): Promise<StartedMcpServer>;
