/**
 * A private `redis-server` on a free port, for tests that take Redis away: killed, paused
 * (SIGSTOP: a Redis that stops answering), resumed and restarted on the same port.
 *
 * @example const redis = await startRedisServer(); await redis.kill(); await redis.restart(); await redis.stop();
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
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
  stop(): Promise<void>;
}

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;

  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100 && !(await answers(url)); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    if (!(await answers(url))) throw new Error(`redis-server did not start on port ${port}`);
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
    kill,
    restart: start,
    pause: () => { child?.kill('SIGSTOP'); },
    resume: () => { child?.kill('SIGCONT'); },
    stop: kill,
  };
}
