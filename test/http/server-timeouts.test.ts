/**
 * Slow and unfinished requests (slowloris) cannot hold a connection: with the bounds of
 * src/main.ts (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS),
 * the server answers 408 or closes the connection soon after the bound, never a 5xx.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { serverOptions } from '../../src/http/server-timeouts.js';
import { sendSlowCase, slowCases } from '../helpers/fuzz-cases.mjs';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('server timeouts', () => {
  let t: TestApp;
  let server: http.Server;
  let baseUrl: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '500' } });
    server = http.createServer(serverOptions(t.config.timeouts), t.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await t.close();
  });

  test('the defaults are 10 s for headers, 30 s for a request, 5 s for an idle keep-alive connection', () => {
    expect(serverOptions({ ...t.config.timeouts, httpHeadersMs: 10_000, httpRequestMs: 30_000, httpKeepAliveMs: 5000 }))
      .toMatchObject({ headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5000 });
  });

  test.each(slowCases().map((c) => [c.name, c] as const))('%s: closed by the server within its bound, never a 5xx', async (_name, c) => {
    const result = await sendSlowCase(baseUrl, c, { giveUpMs: 10_000 });
    expect(result.closedByServer).toBe(true);
    expect(result.ms).toBeLessThan(1000 + 1000 + 1500); // the request bound, the check interval, a margin for a busy machine
    expect(result.status).toBeLessThan(500);
  });

  test('a request line never finished gets 408', async () => {
    const result = await sendSlowCase(baseUrl, { name: 'unfinished', pieces: ['GET /healthz/live HTTP/1.1\r\nHost: x\r\n'] }, { giveUpMs: 10_000 });
    expect(result.status).toBe(408);
  });
});
