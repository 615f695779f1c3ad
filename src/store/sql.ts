/** The little of a SQL driver that the migration runner needs; `pg` and PGlite both fit it. */
export interface SqlConnection {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  /** Runs a script of several statements, without parameters. */
  exec(script: string): Promise<void>;
}

/**
 * One statement on the request path, straight to the driver (pg pool or PGlite). Prepared once
 * per connection unless `prepare: false` (a statement whose text varies from call to call).
 */
export type HotSql = <Row = Record<string, unknown>>(text: string, params: unknown[], options?: { prepare?: boolean }) => Promise<Row[]>;
