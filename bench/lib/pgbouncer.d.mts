/** Types of bench/lib/pgbouncer.mjs, for the TypeScript tests that start it. */
export interface Pgbouncer {
  readonly port: number;
  /** `databaseUrl` (a database of the server behind it) with the pooler's host and port instead. */
  urlFor(databaseUrl: string): string;
  /** Kills it (client connections drop at once) and deletes its folder. */
  stop(): Promise<void>;
}
export const PGBOUNCER_PATH: string;
/** Whether a client gets through to the server at `url` (`SELECT 1`). */
export function answers(url: string): Promise<boolean>;
export function startPgbouncer(options: { upstream: string; settings?: string[]; program?: string }): Promise<Pgbouncer>;
