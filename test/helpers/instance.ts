/**
 * The built service as users run it: `node dist/launch.cjs` (what `npm start` and the image
 * run) in its own process, with exactly the environment given (plus PATH), its output
 * collected. For tests of what only a real process shows: several instances, signals, a crash.
 *
 * @example await buildDist(); const i = await startInstance({ DATABASE_URL }); …; await stopInstance(i);
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { ROOT } from './build.js';
import { freePort, tempDataDir } from './services.js';

export interface Instance {
  readonly baseUrl: string;
  readonly port: number;
  readonly child: ChildProcess;
  readonly dataDir: string;
  /** stdout and stderr so far. */
  output: string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

/** Starts `node dist/launch.cjs` and waits for its start-up line. `port` reuses a port (a restart). */
export async function startInstance(env: Record<string, string>, options: { port?: number; dataDir?: string } = {}): Promise<Instance> {
  const port = options.port ?? await freePort();
  const dataDir = options.dataDir ?? tempDataDir('oauth-instance');
  const baseUrl = `http://localhost:${port}`;
  const child = spawn(process.execPath, ['dist/launch.cjs'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'test', PORT: String(port), BASE_URL: baseUrl, DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const instance: Instance = { baseUrl, port, child, dataDir, output: '', exited };
  const collect = (chunk: Buffer) => { instance.output += chunk.toString('utf8'); };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`instance did not start:\n${instance.output}`)), 60_000);
    const check = () => {
      if (instance.output.includes('OAuth service at')) { clearTimeout(timer); resolve(); }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`instance exited (${code}):\n${instance.output}`)); });
  });
  return instance;
}

/** SIGTERM (a drained shutdown) and wait for the exit; removes its DATA_DIR unless `keepData`. */
export async function stopInstance(instance: Instance, options: { keepData?: boolean } = {}): Promise<number | null> {
  if (instance.child.exitCode === null && instance.child.signalCode === null) instance.child.kill('SIGTERM');
  const code = await instance.exited;
  if (!options.keepData) fs.rmSync(instance.dataDir, { recursive: true, force: true });
  return code;
}
