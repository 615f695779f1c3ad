// Kept over lru-cache: the eviction here is one line, and this cache is dropped whole on every write, which lru-cache's clear() does in time proportional to its capacity.
/**
 * An exact read cache for the embedded mode: one process owns the embedded database (it holds
 * the lock), so an in-process cache is exact there.
 *
 * Every statement reaches PGlite through this process, so this process sees every write: the
 * hot reads (`db.sql` SELECTs: a token with its grant, user and client; a client with its
 * session's user and grant) are answered from memory until *any* statement that is not a
 * SELECT runs, through Prisma, a raw query, a transaction, the cleanup job or the migration
 * runner, whatever table it touches. Then the whole cache is dropped. A read that was under way
 * while a write ran is not kept. Coarse, but it cannot be stale: userinfo on a live token costs
 * no database work, and any change is seen by the next request.
 *
 * Never used on a shared PostgreSQL: other instances write there unseen.
 *
 * @example const { watched, sql } = exactReadCache(pglite); new PrismaPGlite(watched);
 */
import type { PGlite } from '@electric-sql/pglite';
import type { HotSql } from './sql.js';

/** Entries kept at most (each a few rows); the oldest go first. */
export const READ_CACHE_ENTRIES = 10_000;

const READ = /^\s*SELECT\b/i;

export function exactReadCache(pglite: PGlite, limit = READ_CACHE_ENTRIES): { watched: PGlite; sql: HotSql } {
  const cache = new Map<string, unknown[]>();
  let generation = 0;
  const written = () => {
    generation += 1;
    cache.clear();
  };

  async function write<T>(work: () => Promise<T>): Promise<T> {
    written();
    try {
      return await work();
    } finally {
      written();
    }
  }

  const watched = new Proxy(pglite, {
    get(target, property) {
      if (property === 'query') {
        return (text: string, ...rest: unknown[]) => (READ.test(text)
          ? (target.query as (...args: unknown[]) => Promise<unknown>)(text, ...rest)
          : write(() => (target.query as (...args: unknown[]) => Promise<unknown>)(text, ...rest)));
      }
      if (property === 'exec' || property === 'transaction') {
        const method = Reflect.get(target, property, target) as (...args: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => write(() => method.apply(target, args));
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });

  const sql: HotSql = async <Row>({ text, values }: { text: string; values: unknown[] }) => {
    if (!READ.test(text)) return write(async () => ({ rows: (await pglite.query<Row>(text, values)).rows }));
    const key = `${text}\0${JSON.stringify(values)}`;
    const hit = cache.get(key);
    if (hit) return { rows: structuredClone(hit) as Row[] };
    const seen = generation;
    const { rows } = await pglite.query<Row>(text, values);
    if (seen === generation) {
      if (cache.size >= limit) cache.delete(cache.keys().next().value!);
      cache.set(key, structuredClone(rows));
    }
    return { rows };
  };

  return { watched, sql };
}
