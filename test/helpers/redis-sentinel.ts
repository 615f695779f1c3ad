/**
 * A private Redis primary, its replica and three Sentinels (Debian's redis-sentinel) on free
 * ports, each Sentinel from a temporary folder (it rewrites its configuration file): a Redis
 * that fails over by itself, for tests that kill its primary. Failure is judged fast
 * (`down-after-milliseconds` 1000), as a test cannot wait for production's defaults.
 *
 * @example const set = await startSentinelSet(); await set.primary.kill(); await set.promoted(); await set.stop();
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { answers, startRedisServer } from './redis-server.js';
import type { RedisServer } from './redis-server.js';
import { freePort } from './services.js';
import { program, REDIS_SENTINEL } from './system-tool.js';

export interface SentinelSet {
  readonly name: string;
  readonly primary: RedisServer & { readonly port: number };
  readonly replica: RedisServer & { readonly port: number };
  readonly sentinelPorts: readonly number[];
  /** REDIS_SENTINELS and REDIS_SENTINEL_NAME for this set (REDIS_URL emptied). */
  readonly env: Record<string, string>;
  /** The port the Sentinels name as the primary's now. */
  primaryPort(): Promise<number | undefined>;
  /** Resolves once every Sentinel names the replica as the primary (after a failover), or rejects after `timeoutMs`. */
  promoted(timeoutMs?: number): Promise<void>;
  /** Resolves once the replica has everything the primary has written so far. */
  replicated(): Promise<void>;
  /**
   * Holds the failover back (each Sentinel judges the primary down only after 10 minutes) until
   * {@link releaseFailover} sets the judgement back to 1 s; a test holds the window open this way.
   * (A paused Sentinel would not do: resumed, it finds its clock jumped and stays in TILT mode for 30 s.)
   */
  holdFailover(): Promise<void>;
  releaseFailover(): Promise<void>;
  stop(): Promise<void>;
}

/** One command to a Redis or Sentinel on `port` (with its `password`, if it has one), on a connection of its own. */
async function ask({ port, password }: { port: number; password?: string }, ...args: string[]): Promise<unknown> {
  const client = new Redis({ port, password, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000, disconnectTimeout: 100 });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** How long a Sentinel waits before it judges the primary down (production: 5 s or more). */
const DOWN_AFTER_MS = 1000;

const field = (info: string, name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);

/**
 * `serverPassword`: the primary and the replica ask for it (`requirepass`, and `masterauth` to
 * replicate); `sentinelPassword`: the Sentinels ask for it, of clients and of each other.
 */
export async function startSentinelSet({ name = 'oauth-primary', serverPassword, sentinelPassword }: { name?: string; serverPassword?: string; sentinelPassword?: string } = {}): Promise<SentinelSet> {
  // A replica's full sync goes through an RDB file in its folder: a temporary one, not ours.
  const dirs = [fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-redis-'))];
  const auth = serverPassword === undefined ? [] : ['--requirepass', serverPassword, '--masterauth', serverPassword];
  const primary = await startRedisServer({ args: ['--dir', dirs[0]!, ...auth] });
  const replica = await startRedisServer({ args: ['--dir', dirs[0]!, '--dbfilename', 'replica.rdb', '--replicaof', '127.0.0.1', String(primary.port), ...auth] });
  const server = (port: number) => ({ port, password: serverPassword });
  const sentinelAt = (port: number) => ({ port, password: sentinelPassword });
  const sentinels: ChildProcess[] = [];
  const sentinelPorts: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-sentinel-'));
    fs.writeFileSync(path.join(dir, 'sentinel.conf'), [
      `port ${port}`, 'bind 127.0.0.1', `dir ${dir}`,
      `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
      `sentinel down-after-milliseconds ${name} ${DOWN_AFTER_MS}`,
      `sentinel failover-timeout ${name} 5000`,
      ...(serverPassword === undefined ? [] : [`sentinel auth-pass ${name} ${serverPassword}`]),
      ...(sentinelPassword === undefined ? [] : [`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`]),
      '',
    ].join('\n'));
    dirs.push(dir);
    sentinelPorts.push(port);
    sentinels.push(spawn(program(REDIS_SENTINEL), [path.join(dir, 'sentinel.conf')], { stdio: 'ignore' }));
  }
  const set: SentinelSet = {
    name,
    primary,
    replica,
    sentinelPorts,
    env: {
      REDIS_URL: '', REDIS_SENTINELS: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','), REDIS_SENTINEL_NAME: name,
      ...(serverPassword === undefined ? {} : { REDIS_PASSWORD: serverPassword }),
      ...(sentinelPassword === undefined ? {} : { REDIS_SENTINEL_PASSWORD: sentinelPassword }),
    },
    async primaryPort() {
      const reply = await ask(sentinelAt(sentinelPorts[0]!), 'SENTINEL', 'get-master-addr-by-name', name).catch(() => null);
      return Array.isArray(reply) ? Number(reply[1]) : undefined;
    },
    async promoted(timeoutMs = 30_000) {
      await until(async () => {
        const named = await Promise.all(sentinelPorts.map((port) => ask(sentinelAt(port), 'SENTINEL', 'get-master-addr-by-name', name)));
        return named.every((reply) => Array.isArray(reply) && Number(reply[1]) === replica.port);
      }, 'the Sentinels promote the replica', timeoutMs);
    },
    async replicated() {
      const written = field(String(await ask(server(primary.port), 'INFO', 'replication')), 'master_repl_offset');
      await until(async () => field(String(await ask(server(replica.port), 'INFO', 'replication')), 'slave_repl_offset') >= written, 'the replica catches up', 10_000);
    },
    async holdFailover() {
      await Promise.all(sentinelPorts.map((port) => ask(sentinelAt(port), 'SENTINEL', 'SET', name, 'down-after-milliseconds', String(DOWN_AFTER_MS * 600))));
    },
    async releaseFailover() {
      await Promise.all(sentinelPorts.map((port) => ask(sentinelAt(port), 'SENTINEL', 'SET', name, 'down-after-milliseconds', String(DOWN_AFTER_MS))));
    },
    async stop() {
      await Promise.all(sentinels.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        return exited;
      }));
      await Promise.all([primary.stop(), replica.stop()]);
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    // Ready to fail over: each Sentinel answers, knows the other two and the replica, and the replica is in sync.
    await until(async () => (await Promise.all(sentinelPorts.map(answers))).every(Boolean), 'the Sentinels answer', 10_000);
    await until(async () => {
      const views = await Promise.all(sentinelPorts.map((port) => ask(sentinelAt(port), 'SENTINEL', 'master', name)));
      return views.every((view) => {
        const fields = Array.isArray(view) ? view.map(String) : [];
        const value = (key: string) => fields[fields.indexOf(key) + 1];
        return value('num-other-sentinels') === '2' && value('num-slaves') === '1';
      });
    }, 'the Sentinels know each other and the replica', 20_000);
    await until(async () => /master_link_status:up/.test(String(await ask(server(replica.port), 'INFO', 'replication'))), 'the replica syncs', 10_000);
  } catch (error) {
    await set.stop();
    throw error;
  }
  return set;
}
