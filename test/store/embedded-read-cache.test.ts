/**
 * The embedded mode's exact read cache (store/embedded-read-cache.ts): repeated hot reads cost
 * no query, and any write, by any path, is seen by the next read.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { exactReadCache } from '../../src/store/embedded-read-cache.js';
import type { HotSql } from '../../src/store/sql.js';

describe('exact read cache over PGlite', () => {
  let pglite: PGlite;
  let watched: PGlite;
  let sql: HotSql;
  let queries = 0;
  beforeAll(async () => {
    pglite = await PGlite.create();
    await pglite.exec('CREATE TABLE t (id int PRIMARY KEY, v text)');
    await pglite.exec("INSERT INTO t VALUES (1, 'one')");
    const counting = new Proxy(pglite, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (property === 'query') return (...args: unknown[]) => { queries += 1; return (value as (...a: unknown[]) => unknown).apply(target, args); };
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    ({ watched, sql } = exactReadCache(counting, 3));
  });
  afterAll(async () => { await pglite?.close(); });

  const read = async (id = 1) => (await sql<{ v: string }>({ text: 'SELECT v FROM t WHERE id = $1', values: [id] })).rows[0]?.v;

  test('a repeated read is answered from memory, as a copy', async () => {
    expect(await read()).toBe('one');
    const before = queries;
    const { rows } = await sql<{ v: string }>({ text: 'SELECT v FROM t WHERE id = $1', values: [1] });
    rows[0]!.v = 'changed by the caller';
    expect(await read()).toBe('one');
    expect(queries).toBe(before);
  });

  test('a write through the watched connection (as Prisma writes) is seen by the next read', async () => {
    await read();
    await watched.query("UPDATE t SET v = 'uno' WHERE id = 1");
    expect(await read()).toBe('uno');
  });

  test('a write inside a transaction, and a script, are seen too', async () => {
    await read();
    await watched.transaction(async (tx) => { await tx.query("UPDATE t SET v = 'eins' WHERE id = 1"); });
    expect(await read()).toBe('eins');
    await watched.exec("UPDATE t SET v = 'un' WHERE id = 1");
    expect(await read()).toBe('un');
  });

  test('a write through the hot path itself is seen', async () => {
    await read();
    await sql({ text: "WITH w AS (UPDATE t SET v = 'jeden' WHERE id = 1 RETURNING 1) SELECT count(*) FROM w", values: [] });
    expect(await read()).toBe('jeden');
  });

  test('a read under way while a write runs is not kept', async () => {
    const racing = read();
    const writing = watched.query("UPDATE t SET v = 'yksi' WHERE id = 1");
    await Promise.all([racing, writing]);
    expect(await read()).toBe('yksi');
  });

  test('it keeps at most its limit of entries', async () => {
    await watched.exec("INSERT INTO t VALUES (2, 'two'), (3, 'three'), (4, 'four') ON CONFLICT DO NOTHING");
    for (const id of [1, 2, 3, 4]) await read(id);
    const before = queries;
    await read(4);
    expect(queries).toBe(before);
    await read(1); // the oldest went first
    expect(queries).toBe(before + 1);
  });
});
