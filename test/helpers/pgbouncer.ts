/**
 * A private PgBouncer (Debian's /usr/sbin/pgbouncer) on a free port, in transaction mode and
 * otherwise as it ships (no `ignore_startup_parameters`, default pool sizes), in front of the
 * machine's PostgreSQL (or another server), for tests of the service behind a transaction
 * pooler. Runs as the `postgres` user (pgbouncer refuses root), from a temporary folder.
 *
 * @example const bouncer = await startPgbouncer(); const url = bouncer.urlFor(database.url); await bouncer.stop();
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { boundsCommand } from '../../src/store/pooler.js';
import type { SystemTool } from './system-tool.js';
import { postgresUser } from './postgres-server.js';
import { freePort, POSTGRES_ADMIN_URL } from './services.js';

const PGBOUNCER_PATH = '/usr/sbin/pgbouncer';

/** For `describeWith`: the tests that start a pgbouncer need Debian's package. */
export const PGBOUNCER: SystemTool = { tool: `Debian's pgbouncer (${PGBOUNCER_PATH})`, available: fs.existsSync(PGBOUNCER_PATH), install: 'apt-get install pgbouncer' };

export interface Pgbouncer {
  readonly port: number;
  /** `databaseUrl` (a database of the server behind it) with the pooler's host and port instead. */
  urlFor(databaseUrl: string): string;
  /** Stops it (SIGKILL: client connections drop at once) and deletes its folder. */
  stop(): Promise<void>;
}

/** Whether a client gets through PgBouncer to the server (a `SELECT 1` on its `postgres` database). */
async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * `upstream`: the server it pools for (default: the machine's PostgreSQL); every database there
 * is served. `settings`: more `[pgbouncer]` lines, for a test of a pooler set up otherwise.
 */
export async function startPgbouncer({ upstream = POSTGRES_ADMIN_URL, settings = [] }: { upstream?: string; settings?: string[] } = {}): Promise<Pgbouncer> {
  const server = new URL(upstream);
  const user = postgresUser();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-pgbouncer-'));
  const port = await freePort();
  // auth_type trust still needs the user listed in auth_file.
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${decodeURIComponent(server.username) || 'postgres'}" ""\n`);
  fs.writeFileSync(path.join(dir, 'pgbouncer.ini'), [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'userlist.txt')}`,
    'pool_mode = transaction',
    `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    ...settings,
    '',
  ].join('\n'));
  if (user) for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) fs.chownSync(path.join(dir, file), user.uid, user.gid);

  const child: ChildProcess = spawn(PGBOUNCER_PATH, [path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...user });
  const urlFor = (databaseUrl: string) => {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    return url.toString();
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100 && !(await answers(urlFor(upstream))); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
  if (!(await answers(urlFor(upstream)))) {
    const log = fs.existsSync(path.join(dir, 'pgbouncer.log')) ? fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8') : '';
    await stop();
    throw new Error(`pgbouncer did not start on port ${port}:\n${log}`);
  }
  return { port, urlFor, stop };
}

/**
 * The documented one-time command (docs/production-data-tier.md): the server bounds every
 * session of the role in `databaseUrl`'s database, as a pooled service needs. Run on the server
 * itself before the pooler opens its first connection to that database.
 */
export async function boundRole(databaseUrl: string, { statementMs = 2000, idleInTransactionMs = 10_000 } = {}): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: [who] } = await client.query<{ role: string; database: string }>('SELECT current_user AS role, current_database() AS database');
    await client.query(boundsCommand(who!.role, who!.database, { databaseStatementMs: statementMs, databaseIdleInTransactionMs: idleInTransactionMs }));
  } finally {
    await client.end();
  }
}
