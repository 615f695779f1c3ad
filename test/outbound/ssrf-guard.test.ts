/**
 * SSRF guard: every spelling of a refused address is refused, with and without
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS; names are judged by what they resolve to, at registration
 * and again at connect time, without a thread of libuv's pool; a refusal names the rule, never
 * the address a name resolved to.
 */
import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { classifyAddress, guardedLookup, urlProblem, webhookUrlProblem } from '../../src/outbound/ssrf-guard.js';
import { testPolicy } from '../helpers/outbound.js';

const STRICT = testPolicy({ allowPrivate: false });
const LOCAL = testPolicy({ allowPrivate: true });
const PRODUCTION = testPolicy({ httpsOnly: true, allowPrivate: false });

describe('address classes', () => {
  test.each([
    ['127.0.0.1', 'private'], ['127.255.255.254', 'private'], ['::1', 'private'],
    ['10.1.2.3', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'], ['100.127.255.255', 'private'], ['fc00::1', 'private'], ['fd12:3456::1', 'private'],
    ['169.254.169.254', 'forbidden'], ['169.254.0.1', 'forbidden'], ['fe80::1', 'forbidden'], ['fd00:ec2::254', 'forbidden'],
    ['0.0.0.0', 'forbidden'], ['0.1.2.3', 'forbidden'], ['::', 'forbidden'], ['224.0.0.1', 'forbidden'], ['255.255.255.255', 'forbidden'],
    ['100.100.100.200', 'forbidden'],
    // IPv6 spellings of IPv4 addresses are judged by the IPv4 address
    ['::ffff:127.0.0.1', 'private'], ['::ffff:7f00:1', 'private'], ['::ffff:0:7f00:1', 'private'], ['::7f00:1', 'private'],
    ['::ffff:a9fe:a9fe', 'forbidden'], ['::ffff:169.254.169.254', 'forbidden'], ['64:ff9b::a9fe:a9fe', 'forbidden'],
    ['2002:a9fe:a9fe::1', 'forbidden'], ['2002:7f00:1::', 'private'], ['::ffff:10.0.0.1', 'private'],
    // local-use NAT64 (RFC 8215): translated to whatever the operator's NAT64 chooses
    ['64:ff9b:1::a9fe:a9fe', 'private'], ['64:ff9b:1:ffff::1', 'private'],
    ['8.8.8.8', 'public'], ['172.32.0.1', 'public'], ['100.128.0.1', 'public'], ['2606:4700::1111', 'public'], ['::ffff:8.8.8.8', 'public'],
    ['not-an-ip', 'forbidden'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('URLs at registration (IP literals in every spelling the URL parser accepts)', () => {
  test.each([
    'http://127.0.0.1/hook', 'http://2130706433/hook', 'http://0x7f000001/hook', 'http://0x7f.1/hook',
    'http://0177.0.0.1/hook', 'http://127.1/hook', 'http://[::1]/hook', 'http://[::ffff:127.0.0.1]/hook',
    'http://[0:0:0:0:0:ffff:7f00:1]/hook', 'http://10.0.0.1/hook', 'http://100.64.1.1/hook', 'http://[fc00::1]/hook',
  ])('%s: refused, allowed with private networks', (url) => {
    expect(urlProblem(url, STRICT)).toMatch(/loopback, private or shared/);
    expect(urlProblem(url, LOCAL)).toBeUndefined();
  });

  test.each([
    'http://169.254.169.254/latest/meta-data', 'http://2852039166/', 'http://0xa9fea9fe/', 'http://0251.0376.0251.0376/',
    'http://[::ffff:169.254.169.254]/', 'http://[fe80::1]/', 'http://[fd00:ec2::254]/', 'http://0.0.0.0/', 'http://0/',
    'http://[::]/', 'http://[64:ff9b::a9fe:a9fe]/',
  ])('%s: refused even with private networks', (url) => {
    expect(urlProblem(url, LOCAL)).toMatch(/link-local, metadata or reserved/);
    expect(urlProblem(url, STRICT)).toMatch(/link-local, metadata or reserved/);
  });

  test.each([
    ['ftp://example.com/', /https or http/], ['not a url', /absolute/], ['https://user:pw@example.com/', /credentials/],
    ['https://example.com/#frag', /fragment/], [`https://example.com/${'a'.repeat(2000)}`, /2000/],
  ])('%# is malformed', (url, message) => {
    expect(urlProblem(url, LOCAL)).toMatch(message);
  });

  test('production accepts only https', () => {
    expect(urlProblem('http://93.184.215.14/hook', PRODUCTION)).toBe('url must use https');
    expect(urlProblem('https://93.184.215.14/hook', PRODUCTION)).toBeUndefined();
  });

  test('names are resolved: localhost is loopback; an unresolvable name is refused', async () => {
    expect(await webhookUrlProblem('http://localhost:8080/hook', STRICT)).toBe('destination not allowed: localhost resolves to a loopback, private or shared address');
    expect(await webhookUrlProblem('http://localhost:8080/hook', LOCAL)).toBeUndefined();
    expect(await webhookUrlProblem('https://no-such-host.invalid/hook', LOCAL)).toMatch(/cannot be resolved/);
  });
});

describe('at connect time (the lookup a request uses)', () => {
  let server: http.Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => { hits += 1; res.end('ok'); });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => { await new Promise((resolve) => server.close(resolve)); });

  function get(policy: typeof STRICT): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: 'localhost', port, path: '/', agent: false, lookup: guardedLookup(policy) as never, family: 4 }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
  }

  test('a name resolving to loopback is refused before connecting when private networks are not allowed', async () => {
    await expect(get(STRICT)).rejects.toMatchObject({
      name: 'RefusedDestinationError', message: 'destination not allowed: localhost resolves to a loopback, private or shared address', resolved: '127.0.0.1',
    });
    expect(hits).toBe(0);
  });

  test('and reached when they are', async () => {
    expect(await get(LOCAL)).toBe(200);
    expect(hits).toBe(1);
  });
});

describe('lookups', () => {
  test('hold no thread of the pool sign-ins hash on: the system resolver (getaddrinfo) is never called', async () => {
    const spies = [jest.spyOn(dns, 'lookup'), jest.spyOn(dns.promises, 'lookup')];
    try {
      const atConnect = (name: string) => new Promise<unknown>((resolve) => {
        guardedLookup(LOCAL)(name, { family: 4 }, (error: NodeJS.ErrnoException | null, address: unknown) => resolve(error ? error.code : address));
      });
      const answers = await Promise.all([
        ...Array.from({ length: 4 }, () => webhookUrlProblem('http://localhost:8080/hook', LOCAL)),
        webhookUrlProblem('https://no-such-host.invalid/hook', LOCAL),
        ...Array.from({ length: 4 }, () => atConnect('localhost')),
        atConnect('no-such-host.invalid'),
      ]);
      expect(answers).toEqual([
        undefined, undefined, undefined, undefined, expect.stringMatching(/cannot be resolved/),
        '127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1', 'ENOTFOUND',
      ]);
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});
