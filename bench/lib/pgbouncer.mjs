/**
 * A private PgBouncer (Debian's /usr/sbin/pgbouncer) on a free port, in transaction mode and
 * otherwise as it ships, in front of a PostgreSQL server: the bench's `pgbouncer` mode and the
 * tests of the service behind a transaction pooler (test/helpers/pgbouncer.ts). As root it runs
 * as the `postgres` user (pgbouncer refuses root), from a temporary folder.
 *
 * @example const bouncer = await startPgbouncer({ upstream: 'postgresql://postgres@127.0.0.1:5432/postgres' }); bouncer.urlFor(url); await bouncer.stop();
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, sleep } from './processes.mjs';

export const PGBOUNCER_PATH = '/usr/sbin/pgbouncer';

/** The `postgres` user's ids when we are root; undefined otherwise. */
function postgresUser() {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Whether a client gets through to the server (`SELECT 1`). */
export async function answers(url) {
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
 * `upstream`: a URL of the server it pools for (its user is the one pgbouncer lets in; every
 * database there is served). `settings`: more `[pgbouncer]` lines. `program`: the pgbouncer to
 * run (the tests' comes from test/helpers/system-tool.ts). Resolves once a client gets
 * through; `urlFor(url)` is `url` with the pooler's host and port; `stop()` kills it (SIGKILL:
 * client connections drop at once) and deletes its folder.
 */
export async function startPgbouncer({ upstream, settings = [], program = PGBOUNCER_PATH }) {
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

  const child = spawn(program, [path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...user });
  const urlFor = (databaseUrl) => {
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
  for (let i = 0; i < 100 && !(await answers(urlFor(upstream))); i += 1) await sleep(100);
  if (!(await answers(urlFor(upstream)))) {
    const log = fs.existsSync(path.join(dir, 'pgbouncer.log')) ? fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8') : '';
    await stop();
    throw new Error(`pgbouncer did not start on port ${port}:\n${log}`);
  }
  return { port, urlFor, stop };
}
