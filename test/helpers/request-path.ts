/**
 * The durable store's request path as app.ts assembles it, on a test database: the hot reads,
 * the write sender, the PostgreSQL adapters, and a way to run work as one request.
 *
 * @example const path = requestPath(store.db); await path.inRequest(() => path.adapters('AccessToken').find(id));
 */
import { postgresAdapters } from '../../src/oidc/adapter.js';
import type { AdapterFor } from '../../src/oidc/adapter.js';
import type { Database } from '../../src/store/database.js';
import { createHotReads } from '../../src/store/hot-reads.js';
import type { HotReads } from '../../src/store/hot-reads.js';
import { withRequestState } from '../../src/store/request-state.js';
import type { HotSql } from '../../src/store/sql.js';
import { createWriteSender } from '../../src/store/write-sender.js';
import type { Retried, WriteSender } from '../../src/store/write-sender.js';

export interface RequestPath {
  readonly hot: HotReads;
  readonly send: WriteSender;
  readonly adapters: AdapterFor;
  /** Runs `work` as one request: its reads remembered, its writes sent as one statement when it ends. */
  inRequest<T>(work: () => Promise<T>): Promise<T>;
}

/**
 * `sql`: the driver the statements go to (default the database's own; a counting wrapper in some
 * tests); `retried`: told of each shared write statement sent again request by request.
 */
export function requestPath(db: Pick<Database, 'prisma' | 'sql'>, options: { byTurn?: boolean; sql?: HotSql; retried?: Retried } = {}): RequestPath {
  const sql = options.sql ?? db.sql;
  const byTurn = options.byTurn ?? false;
  const send = createWriteSender(sql, { byTurn, ...(options.retried ? { retried: options.retried } : {}) });
  const hot = createHotReads(sql, { byTurn });
  return { hot, send, adapters: postgresAdapters(db, hot, send), inRequest: (work) => withRequestState(send, work) };
}
