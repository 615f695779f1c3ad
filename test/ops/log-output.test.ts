/**
 * How the process writes its lines (src/main.ts, src/ops/logger.ts; docs/operations.md "Logs"): readable
 * lines (pino-pretty) for a person at a terminal outside production, one JSON object a line
 * otherwise; LOG_LEVEL drops the lines below it (at `warn`, the access lines) and keeps the rest,
 * the provider's warnings (the notice it prints as it loads too) and errors included. The last two
 * run the built service as operators do.
 */
import http from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLogger, readableOutput } from '../../src/ops/logger.js';
import { buildDist } from '../helpers/build.js';
import { startInstance, stopInstance } from '../helpers/instance.js';
import { createTestDatabase } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';

// eslint-disable-next-line no-control-regex
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');
const lines = (text: string) => text.split(/\r?\n/).filter(Boolean);

describe('readable or JSON', () => {
  test('readable only when the stream is a terminal, and never in production', () => {
    expect(readableOutput({ isTTY: true }, false)).toBe(true);
    expect(readableOutput({ isTTY: true }, true)).toBe(false);
    expect(readableOutput({ isTTY: false }, false)).toBe(false);
    expect(readableOutput({}, false)).toBe(false); // a pipe or a file: no isTTY at all
  });

  test('a readable line names its level and message, its fields beneath, redacted as in JSON', async () => {
    let text = '';
    const destination = new Writable({ write(chunk: Buffer, _encoding, done) { text += chunk.toString('utf8'); done(); } });
    const logger = createLogger({ level: 'info', pretty: true, destination });
    logger.info({ request_id: 'r-1', password: 'pw-not-shown-at-a-terminal-8V' }, 'request');
    logger.debug('below the level');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const shown = plain(text);
    expect(shown).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: request$/m);
    expect(shown).toMatch(/^ {4}request_id: "r-1"$/m);
    expect(shown).toMatch(/^ {4}password: "\[Redacted\]"$/m);
    expect(shown).not.toContain('below the level');
    expect(shown).not.toMatch(/^\{/m);
  });
});

describe('node dist/launch.cjs', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    await buildDist();
    database = await createTestDatabase({ migrated: true });
  }, 180_000);
  afterAll(async () => { await database?.drop(); });

  test('at a terminal (outside production) its lines are readable', async () => {
    const instance = await startInstance({ DATABASE_URL: database.url }, { terminal: true });
    try {
      expect((await fetch(`${instance.baseUrl}/healthz/live`)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 300)); // lines go out at most 200 ms later (FLUSH_MS)
    } finally {
      await stopInstance(instance);
    }
    const shown = lines(plain(instance.output));
    expect(shown).toContainEqual(expect.stringMatching(/^\[[\d:.]+\] INFO: OAuth service at http:\/\/localhost:\d+ /));
    expect(shown).toContainEqual(expect.stringMatching(/^\[[\d:.]+\] INFO: request$/));
    expect(shown).toContain('    route: "/healthz/live"');
    expect(shown.filter((line) => line.startsWith('{'))).toEqual([]);
  });

  test('LOG_LEVEL=warn: JSON lines on stdout, no access line, and the warnings and errors', async () => {
    const instance = await startInstance({ DATABASE_URL: database.url, LOG_LEVEL: 'warn', SHUTDOWN_DELAY_MS: '1000', SHUTDOWN_TIMEOUT_MS: '300' }, { ready: 'live' });
    let held: http.ClientRequest | undefined;
    try {
      expect((await fetch(`${instance.baseUrl}/healthz/live`)).status).toBe(200);
      // A token request: the provider warns that its body was read before it (docs/operations.md "Logs").
      const token = await fetch(`${instance.baseUrl}/api/token.php`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', client_id: 'nobody', client_secret: 'x' }) });
      expect(token.status).toBe(401);
      // A request still in flight at shutdown, past SHUTDOWN_TIMEOUT_MS: its body never ends, and
      // the shutdown says so as an error. SHUTDOWN_DELAY_MS leaves it time to be read first.
      held = http.request(`${instance.baseUrl}/api/token.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1000' } });
      held.on('error', () => undefined);
      held.write('grant_type=');
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await stopInstance(instance);
      held?.destroy();
    }
    // Nothing raw on stderr either: even the notice oidc-provider prints as it loads is a log line.
    expect(lines(instance.output).filter((line) => !line.startsWith('{'))).toEqual([]);
    const written = lines(instance.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(written.filter((line) => line.msg === 'request')).toEqual([]);
    expect(written.filter((line) => Number(line.level) < 40)).toEqual([]);
    expect(written).toContainEqual(expect.objectContaining({ level: 40, source: 'oidc-provider', msg: expect.stringMatching(/^already parsed request body detected/) }));
    expect(written).toContainEqual(expect.objectContaining({ level: 50, msg: 'SIGTERM: requests still running after SHUTDOWN_TIMEOUT_MS (300 ms); closed anyway' }));
    // That notice, where it is printed: a Node release older than 22 "Jod" (lib/index.js of oidc-provider).
    const lts = process.release.lts;
    if (!lts || lts < 'Jod') expect(written).toContainEqual(expect.objectContaining({ level: 40, source: 'oidc-provider', msg: expect.stringMatching(/^Unsupported runtime/) }));
  });
});
