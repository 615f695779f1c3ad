/**
 * The bench's load drivers ("drives it from another process (autocannon or Debian's
 * wrk)"): both take one spec and answer one JSON line, and each fresh input is sent once, a
 * rotated refresh token next in its chain. A tiny server records what it was sent.
 * No speed is asserted.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runDriver } from '../../bench/lib/processes.mjs';
import { describeWith, WRK } from '../helpers/system-tool.js';

let server: http.Server;
let url: string;
let bodies: string[] = [];
let dir: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-drivers-'));
  // POST /token answers a new refresh token derived from the one it got ("a" → "a.1" → "a.1.1");
  // "bad" gets 400; GET answers 200.
  server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk) => { body += chunk; }).on('end', () => {
      if (req.method !== 'POST') return res.end('{}');
      bodies.push(body);
      const token = new URLSearchParams(body).get('refresh_token') ?? '';
      res.writeHead(token === 'bad' ? 400 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ refresh_token: `${token}.1`, other: 'x' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(dir, { recursive: true, force: true });
});

const pool = (values: string[]) => {
  const file = path.join(dir, `pool-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(file, JSON.stringify(values));
  return file;
};

/** The tests every load driver passes; `driver` is its file in bench/drivers. */
const driverTests = (driver: string) => () => {
  test('a fixed request: statuses counted, the answer line has every field', async () => {
    const result = await runDriver(driver, { url, connections: 2, seconds: 1, request: { method: 'GET', path: '/' }, expect: [200] });
    expect(Object.keys(result).sort()).toEqual(['errors', 'exhausted', 'p50', 'p99', 'perSecond', 'requests', 'seconds', 'served', 'statuses', 'wasted']);
    expect(result.served).toBeGreaterThan(0);
    expect(result.statuses).toEqual({ 200: result.requests });
    expect(result.served).toBe(result.requests);
    expect(result.exhausted).toBe(false);
    expect(result.p99).toBeGreaterThanOrEqual(result.p50);
  }, 30_000);

  test('a pool: each value sent once, encoded into the body; the run stops when it runs out', async () => {
    bodies = [];
    const values = Array.from({ length: 40 }, (_, i) => `code ${i}&=/+`);
    const result = await runDriver(driver, {
      url, connections: 2, seconds: 5, request: { method: 'POST', path: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      expect: [200], pool: { file: pool([...values, 'bad']), body: 'code={value}&client_id=c1' },
    });
    expect(result.exhausted).toBe(true);
    expect(result.seconds).toBeLessThan(5);
    const sent = bodies.map((body) => new URLSearchParams(body)).filter((form) => form.get('code') !== 'pool-exhausted');
    expect(sent.map((form) => form.get('code')).sort()).toEqual([...values, 'bad'].sort()); // two connections: any order
    expect(sent.every((form) => form.get('client_id') === 'c1')).toBe(true);
    // Answers that arrive after the pool ran out are not figures: they count as wasted.
    expect(result.requests + result.wasted).toBeGreaterThanOrEqual(40);
    expect(result.served).toBe(result.statuses[200]);
    expect(result.served).toBeGreaterThanOrEqual(39);
    expect(Object.keys(result.statuses).every((status) => status === '200' || status === '400')).toBe(true);
  }, 30_000);

  test('a raw pool: each value, several fields already encoded, sent as it is', async () => {
    bodies = [];
    const values = Array.from({ length: 20 }, (_, i) => `code=c${i}&client_assertion=a.b${i}.c`);
    const result = await runDriver(driver, {
      url, connections: 2, seconds: 5, request: { method: 'POST', path: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      expect: [200], pool: { file: pool(values), body: '{value}', raw: true },
    });
    expect(result.exhausted).toBe(true);
    const sent = bodies.filter((body) => body !== 'pool-exhausted' && !body.includes('unsent'));
    expect(sent.sort()).toEqual([...values].sort());
  }, 30_000);

  test('recycle: the token an answer carries is sent next, so every chain stays one sequence', async () => {
    bodies = [];
    const result = await runDriver(driver, {
      url, connections: 2, seconds: 1, request: { method: 'POST', path: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      expect: [200], pool: { file: pool(['a', 'b', 'c']), body: 'grant_type=refresh_token&refresh_token={value}', recycle: 'refresh_token' },
    });
    expect(result.served).toBeGreaterThan(10);
    const sent = bodies.map((body) => new URLSearchParams(body).get('refresh_token')!);
    // Every token sent is either a chain's start or the answer to the token before it, sent once.
    expect(new Set(sent).size).toBe(sent.length);
    for (const token of sent) expect(token).toMatch(/^[abc](\.1)*$/);
    for (const token of sent.filter((t) => t.length > 1)) expect(sent).toContain(token.slice(0, -2));
  }, 30_000);
};

describe('bench driver cannon', driverTests('cannon'));
describeWith(WRK)('bench driver wrk', driverTests('wrk'));

describe('bench driver flows (fresh login flows)', () => {
  let site: http.Server;
  let base: string;
  const seen: string[] = [];
  let connections = 0;

  beforeAll(async () => {
    // A flow in miniature: authorize → the login page (its cookie scoped to the page's path)
    // → the login post (which sets a site-wide cookie, as a session does) → the code redirect to
    // the client, off the site.
    site = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (chunk) => { body += chunk; }).on('end', () => {
        const cookie = req.headers.cookie ?? '';
        seen.push(`${req.method} ${req.url} [${cookie}]`);
        if (req.method === 'GET' && req.url?.startsWith('/api/authorize.php?')) {
          res.writeHead(303, { location: '/interaction/u1', 'set-cookie': '_interaction=u1; path=/interaction/u1; httponly' });
          return res.end();
        }
        if (req.method === 'GET' && req.url === '/interaction/u1' && cookie === '_interaction=u1') {
          res.writeHead(200, { 'content-type': 'text/html' });
          return res.end('<form action="/interaction/u1/login" method="post"><input type="hidden" name="_csrf" value="t1"></form>');
        }
        const form = new URLSearchParams(body);
        if (req.method === 'POST' && req.url === '/interaction/u1/login' && cookie === '_interaction=u1'
          && form.get('_csrf') === 't1' && form.get('username') === 'u' && form.get('password') === 'p') {
          res.writeHead(303, { location: 'http://127.0.0.1:9/callback?code=c1', 'set-cookie': '_session=s1; path=/; httponly' });
          return res.end();
        }
        res.writeHead(400);
        res.end('unexpected');
      });
    });
    site.on('connection', () => { connections += 1; });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    site.closeAllConnections(); // the driver's kept-alive connections
    await new Promise((resolve) => site.close(resolve));
  });

  test('walks each flow with its own cookies to the code, and reports its own CPU time', async () => {
    const result = await runDriver('flows', {
      url: base, client: { client_id: 'c', redirect_uri: 'http://127.0.0.1:9/callback' }, user: { username: 'u', password: 'p' }, seconds: 1, concurrency: 2,
    });
    expect(result.statuses).toEqual({ ok: result.served, failed: 0 });
    expect(result.served).toBeGreaterThan(5);
    expect(result.httpRequests).toBe(3 * result.served);
    expect(result.driverCpuUs).toBeGreaterThan(0);
    // A new browser each flow: its first request carries no cookie, not even the last flow's session.
    expect(seen.filter((line) => line.startsWith('GET /api/authorize.php?')).every((line) => line.endsWith('[]'))).toBe(true);
    // Connections are kept alive across requests and flows (two flows at a time).
    expect(connections).toBeLessThan(result.httpRequests! / 4);
  }, 30_000);
});
