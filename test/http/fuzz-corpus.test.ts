/**
 * A fixed, seeded corpus of malformed requests (the generator of `npm run fuzz`, a few hundred
 * cases) against the in-process app on Postgres and Redis, over raw sockets so any bytes reach
 * it: every answer is below 500, none hangs, none carries internals (stack frames, error
 * names, file paths, SQL, Prisma), and nothing is logged as an unexpected error.
 *
 * The app is served with the bounds of src/main.ts (src/http/server-timeouts.ts), short ones.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { serverOptions } from '../../src/http/server-timeouts.js';
import { basicAuth, registerClient } from '../helpers/fixtures.js';
import { csrfContext, generateCases, problemsOf, sendCase } from '../helpers/fuzz-cases.mjs';
import type { FuzzContext } from '../helpers/fuzz-cases.mjs';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const SEED = 20261123;
const COUNT = 600;

describe('the fuzz checker', () => {
  const c = { name: 'x', method: 'GET', target: '/api/%27SELECT%20x%20FROM%20y', headers: [] as [string, string][] };
  const answer = (status: number, body: string, timedOut = false) => ({ status, headers: {}, body, ms: 1, timedOut });
  test('flags a 5xx, a hang and internals in a body', () => {
    expect(problemsOf(c, answer(500, ''))).toEqual(['status 500']);
    expect(problemsOf(c, answer(0, '', true))).toEqual(['no answer (hang)']);
    expect(problemsOf(c, answer(400, 'TypeError: x\n    at handler (/work/app/dist/app.js:10:5)')).length).toBeGreaterThanOrEqual(3);
    expect(problemsOf(c, answer(400, 'PrismaClientKnownRequestError: relation "users" does not exist'))).not.toEqual([]);
    expect(problemsOf(c, answer(400, '<h1>oops! something went wrong</h1>'))).not.toEqual([]);
  });
  test('does not count an echo of the request itself', () => {
    expect(problemsOf(c, answer(404, "nothing is served at GET /api/'SELECT x FROM y"))).toEqual([]);
  });
});

describe(`fuzz corpus (seed ${SEED}, ${COUNT} cases)`, () => {
  let t: TestApp;
  let server: http.Server;
  let baseUrl: string;
  let context: FuzzContext;
  const logged: unknown[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      log: (error) => logged.push(error),
      env: { HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    server = http.createServer(serverOptions(t.config.timeouts), t.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Context, so cases get past "unknown client": a client, a pending login, a webhook.
    const client = await registerClient(t);
    const authorize = await fetch(`${t.baseUrl}/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`, { redirect: 'manual' });
    const uid = /\/interaction\/([^/?#]+)/.exec(authorize.headers.get('location') ?? '')?.[1];
    const cookie = authorize.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
    const hook = await fetch(`${t.baseUrl}/api/webhooks.php`, {
      method: 'POST',
      headers: { authorization: basicAuth(client), 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['token.issued'] }),
    });
    expect(uid).toBeDefined();
    expect(hook.status).toBe(201);
    context = { client, interaction: { uid: uid!, cookie }, webhookId: ((await hook.json()) as { id: string }).id, csrf: await csrfContext(t.baseUrl) };
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await t.close();
  });

  test('every answer is below 500, in time, without internals', async () => {
    const cases = generateCases({ seed: SEED, count: COUNT, context });
    const problems: string[] = [];
    const statuses = new Set<number>();
    const worker = async () => {
      for (let next = cases.next(); !next.done; next = cases.next()) {
        const response = await sendCase(baseUrl, next.value, { timeoutMs: 10_000 });
        statuses.add(response.status);
        for (const problem of problemsOf(next.value, response, baseUrl)) problems.push(`${next.value.name}: ${problem}`);
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    expect(problems).toEqual([]);
    // Every form's _csrf was fuzzed.
    const forms = [...generateCases({ seed: SEED, count: COUNT, context })].filter((c) => c.name?.endsWith('(csrf)')).map((c) => c.target!.split('?')[0]);
    expect(new Set(forms).size).toBe(6);
    // The corpus reaches past the parsers: refusals of every kind, and pages served.
    expect([...statuses]).toEqual(expect.arrayContaining([200, 400, 401, 404]));
  }, 180_000);

  test('a chunked body that breaks off while the handler waits on a store is no error of ours (found by the fuzz: a logged 500)', async () => {
    const before = logged.length;
    for (const action of ['login', 'confirm', 'abort']) {
      const raw = Buffer.from(`POST /interaction/${context.interaction!.uid}/${action} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n`
        + 'Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n\r\nzz\r\nabc\r\n0\r\n\r\n', 'latin1');
      const response = await sendCase(baseUrl, { name: action, raw });
      expect(response.status).toBe(400); // Node's parser refuses the chunk size
    }
    await new Promise((resolve) => setTimeout(resolve, 500)); // the handlers finish after the answer
    expect(logged.slice(before)).toEqual([]);
  });

  test('nothing was logged as an unexpected error', () => {
    expect(logged).toEqual([]);
  });
});
