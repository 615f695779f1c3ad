/** The little of a SQL driver that the migration runner needs; `pg` and PGlite both fit it. */
export interface SqlConnection {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  /** Runs a script of several statements, without parameters. */
  exec(script: string): Promise<void>;
}

/**
 * One statement on the request path, straight to the driver (pg's `pool.query`, or PGlite): its
 * text, its values and, for the request path's fixed statements (store/statements.ts), the name
 * it is prepared under once per connection where that lasts (a direct connection: not behind a
 * transaction pooler, nor on PGlite).
 */
export type HotSql = <Row = Record<string, unknown>>(query: { readonly name?: string; readonly text: string; readonly values: unknown[] }) => Promise<{ rows: Row[] }>;
