/**
 * A private `redis-server` on a free port, for tests that take Redis away: killed, paused
 * (SIGSTOP: a Redis that stops answering), resumed and restarted on the same port.
 *
 * @example const redis = await startRedisServer(); await redis.kill(); await redis.restart(); await redis.stop();
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll } from '@jest/globals';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../src/store/redis.js';
import { freePort } from './services.js';

export interface RedisServer {
  readonly url: string;
  /** SIGKILL: connections drop at once, as when the server or its host dies. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty). */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: connections stay open but nothing answers. */
  pause(): void;
  resume(): void;
  /** Out of memory (`maxmemory` 1 byte, no eviction): Redis answers, but every write is refused with an `OOM` reply; reads and PING still served. */
  refuseWrites(refuse: boolean): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Whether a Redis answers PING on `port`, over a bare socket: an ioredis probe that failed to
 * connect left a 2 s timer of its own behind (its disconnect waits for a close that had already
 * happened), which kept the test worker alive after the suite.
 */
export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (answered: boolean) => { socket.destroy(); resolve(answered); };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    // A server that asks for a password answers too (NOAUTH).
    socket.once('data', (data) => done(/^(\+PONG|-NOAUTH)/.test(data.toString('latin1'))));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

/** `args`: more of redis-server's options (say `--replicaof 127.0.0.1 6380`); `port`: a given one instead of a free one. */
export async function startRedisServer({ args = [], port: given }: { args?: string[]; port?: number } = {}): Promise<RedisServer & { readonly port: number }> {
  const port = given ?? await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;

  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], { stdio: 'ignore' });
    for (let i = 0; i < 100 && !(await answers(port)); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    if (!(await answers(port))) throw new Error(`redis-server did not start on port ${port}`);
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGCONT');
    running.kill('SIGKILL');
    await exited;
  };

  await start();
  return {
    url,
    port,
    kill,
    restart: start,
    pause: () => { child?.kill('SIGSTOP'); },
    resume: () => { child?.kill('SIGCONT'); },
    refuseWrites: async (refuse) => {
      const config = (...args: string[]) => new Promise<void>((resolve, reject) => {
        execFile('redis-cli', ['-p', String(port), 'CONFIG', 'SET', ...args], (error) => (error ? reject(error) : resolve()));
      });
      await config('maxmemory-policy', 'noeviction');
      await config('maxmemory', refuse ? '1' : '0');
    },
    stop: kill,
  };
}

/**
 * A private redis-server and the service's own client on it (`connectRedis`, each call bound at
 * `commandMs`), for the describe block that calls this: registers its beforeAll/afterAll; read
 * the fields inside tests.
 *
 * @example const stores = privateRedis(300); test('…', () => { stores.server.pause(); … stores.redis.get('k') … });
 */
export function privateRedis(commandMs: number): { server: RedisServer; redis: Redis } {
  const stores = {} as { server: RedisServer; redis: Redis };
  beforeAll(async () => {
    stores.server = await startRedisServer();
    stores.redis = await connectRedis(stores.server.url, { redisCommandMs: commandMs, redisConnectMs: 2000 });
  }, 30_000);
  afterAll(async () => {
    stores.redis?.disconnect();
    stores.server?.resume();
    await stores.server?.stop();
  });
  return stores;
}
