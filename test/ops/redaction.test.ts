/**
 * What the logger redacts (src/ops/logger.ts): every secret field, an authorization code under
 * any field the service logs included, is "[Redacted]"; an error's or a warning's own code
 * (ECONNREFUSED, a SQLSTATE, a Prisma code, a Node warning code) is kept, so that an error line
 * still says what failed. The codes and errors are real: a code from a flow, errors from the
 * machine's Postgres and from a refused connection.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { createLogger, errorLog, SECRET_FIELDS } from '../../src/ops/logger.js';
import { routeProcessOutput } from '../../src/ops/process-output.js';
import { obtainCode } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

type Line = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function captured() {
  const chunks: string[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (chunk: string) => { chunks.push(chunk); } } });
  return { logger, text: () => chunks.join(''), lines: (): Line[] => chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line) };
}

/** The error a rejected promise carries. */
async function failure(work: () => Promise<unknown>): Promise<Error & { code?: unknown }> {
  try {
    await work();
  } catch (error) {
    return error as Error & { code?: unknown };
  }
  throw new Error('expected a failure');
}

let t: TestApp;
let code: string;
beforeAll(async () => {
  t = await startTestApp();
  const user = await createUser(t);
  code = await obtainCode(t.baseUrl, await registerClient(t), user);
});
afterAll(async () => { await t?.close(); });

describe('an authorization code', () => {
  test('is redacted under every field a line of this service holds, an error and a warning included', () => {
    const out = captured();
    const fields = ['detail', 'params', 'body', 'query', 'err', 'warning'];
    out.logger.info({ code }, 'top level');
    for (const field of fields) out.logger.info({ [field]: { code } }, field);
    errorLog(out.logger)(Object.assign(new Error('an error that carries a code'), { code }));
    out.logger.warn({ source: 'node', warning: { name: 'Warning', code } }, 'a warning that carries a code');

    const lines = out.lines();
    expect(lines).toHaveLength(9);
    expect(lines[0]!.code).toBe('[Redacted]');
    fields.forEach((field, index) => expect(lines[index + 1]![field]).toEqual({ code: '[Redacted]' }));
    expect(lines[7]!.err.code).toBe('[Redacted]');
    expect(lines[8]!.warning.code).toBe('[Redacted]');
    expect(out.text()).not.toContain(code);
  });

  test('every other secret field stays redacted, on errors and warnings too', () => {
    const out = captured();
    const secret = 'a-secret-value-that-must-not-show-3J';
    for (const field of SECRET_FIELDS) {
      out.logger.info({ [field]: secret, detail: { [field]: secret }, warning: { [field]: secret } }, field);
      errorLog(out.logger)(Object.assign(new Error('carrying secrets'), { [field]: secret }));
    }
    expect(out.lines()).toHaveLength(SECRET_FIELDS.length * 2);
    expect(out.text()).not.toContain(secret);
  });

  test('an upper-case value is kept only on an error or a warning: elsewhere `code` is redacted whatever its shape', () => {
    const out = captured();
    out.logger.info({ code: 'ECONNREFUSED', detail: { code: 'P2002' } }, 'not an error');
    expect(out.lines()[0]).toMatchObject({ code: '[Redacted]', detail: { code: '[Redacted]' } });
  });
});

describe("an error's own code is kept", () => {
  test('a refused connection: ECONNREFUSED', async () => {
    const out = captured();
    const client = new pg.Client({ connectionString: 'postgresql://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 2000 });
    const error = await failure(() => client.connect());
    expect(error.code).toBe('ECONNREFUSED');
    errorLog(out.logger)(error);
    expect(out.lines()).toEqual([expect.objectContaining({ level: 50, msg: 'error', err: expect.objectContaining({ code: 'ECONNREFUSED' }) })]);
  });

  test("Postgres's SQLSTATE (57014: a statement timeout) and Prisma's code (P2002: a unique violation)", async () => {
    const out = captured();
    const client = new pg.Client({ connectionString: t.env.DATABASE_URL });
    await client.connect();
    const timeout = await failure(async () => {
      try {
        await client.query('SET statement_timeout = 10');
        await client.query('SELECT pg_sleep(1)');
      } finally {
        await client.end();
      }
    });
    const taken = (await t.app.db.prisma.user.findFirstOrThrow()).username;
    const duplicate = await failure(() => t.app.db.prisma.user.create({ data: { id: randomUUID(), username: taken, email: 'x@example.com', fullName: 'X', passwordHash: 'x' } }));
    errorLog(out.logger)(timeout);
    errorLog(out.logger)(duplicate);
    expect(out.lines().map((line) => line.err.code as unknown)).toEqual(['57014', 'P2002']);
    expect(out.text()).not.toContain('[Redacted]');
  });

  test("a Node warning's code, as process output logs it", () => {
    const out = captured();
    const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error };
    const listeners = process.listeners('warning');
    try {
      routeProcessOutput(out.logger);
      process.emit('warning', Object.assign(new Error('Buffer() is deprecated'), { name: 'DeprecationWarning', code: 'DEP0005' }));
    } finally {
      Object.assign(console, saved);
      process.removeAllListeners('warning');
      for (const listener of listeners) process.on('warning', listener);
    }
    expect(out.lines()).toEqual([expect.objectContaining({ source: 'node', warning: { name: 'DeprecationWarning', code: 'DEP0005' } })]);
  });
});
