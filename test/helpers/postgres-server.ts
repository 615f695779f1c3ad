/**
 * A private PostgreSQL cluster on a free port, for tests that take the database away: stopped
 * (SIGKILL of every process: connections drop at once), paused (SIGSTOP of every process of the
 * cluster: connections stay open but nothing answers, as a hung host looks), resumed and
 * restarted on the same data. Never the machine's shared server.
 *
 * As root, initdb and postgres refuse to run: the cluster runs as the `postgres` user.
 *
 * @example const pg = await startPostgresServer(); pg.pause(); pg.resume(); await pg.kill(); await pg.restart(); await pg.stop();
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, tempDataDir } from './services.js';
import { answers } from '../../bench/lib/pgbouncer.mjs';

const BIN = '/usr/lib/postgresql/15/bin';

export interface PostgresServer {
  /** The cluster's `postgres` database. */
  readonly url: string;
  /** A URL for another database of this cluster. */
  urlFor(database: string): string;
  /** SIGKILL of the postmaster and its backends: every connection drops. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /** SIGSTOP of every process of the cluster: nothing answers, connections stay open. */
  pause(): void;
  resume(): void;
  /** Stops it and deletes its data. */
  stop(): Promise<void>;
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  };
}

/** The pids of `pid`'s children (backends, checkpointer, …), read from /proc. */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return children;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

export async function startPostgresServer(): Promise<PostgresServer> {
  const user = postgresUser();
  const dataDir = tempDataDir('pg'); // a cluster is written whole: in memory where there is room
  if (user) fs.chownSync(dataDir, user.uid, user.gid);
  execFileSync(`${BIN}/initdb`, ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], { stdio: 'ignore', ...user });
  const port = await freePort();
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;

  const start = async () => {
    child = spawn(`${BIN}/postgres`, [
      '-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dataDir}`,
      '-c', 'fsync=off', '-c', 'max_connections=50',
      // Its shared memory segments in its own folder, not loose in /dev/shm: a killed cluster leaves none behind.
      '-c', 'dynamic_shared_memory_type=mmap',
    ], { stdio: 'ignore', ...user });
    for (let i = 0; i < 100 && !(await answers(url)); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    if (!(await answers(url))) throw new Error(`postgres did not start on port ${port}`);
  };
  const everyProcess = () => (child?.pid ? [child.pid, ...childrenOf(child.pid)] : []);
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running?.pid || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    const backends = childrenOf(running.pid);
    for (const pid of [running.pid, ...backends]) signal(pid, 'SIGCONT');
    for (const pid of [running.pid, ...backends]) signal(pid, 'SIGKILL');
    await exited;
    fs.rmSync(path.join(dataDir, 'postmaster.pid'), { force: true });
  };

  await start();
  return {
    url,
    urlFor: (database) => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    kill,
    restart: start,
    pause: () => { for (const pid of everyProcess()) signal(pid, 'SIGSTOP'); },
    resume: () => { for (const pid of everyProcess()) signal(pid, 'SIGCONT'); },
    async stop() {
      await kill();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
