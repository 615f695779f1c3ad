/**
 * The built service as users run it: `node dist/launch.cjs` (what `npm start` and the image
 * run) in its own process, with exactly the environment given (plus PATH), its output
 * collected. For tests of what only a real process shows: several instances, signals, a crash,
 * what it prints at a terminal (`terminal`: run under a pseudo-terminal by util-linux `script`).
 * Its first start on a database stores the fixture signing key (test/helpers/fixture-keys.ts)
 * rather than generating an RSA key, unless the environment names another JWKS_FILE.
 *
 * @example await buildDist(); const i = await startInstance({ DATABASE_URL }); …; await stopInstance(i);
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { ROOT } from './build.js';
import { fixtureJwksFile } from './fixture-keys.js';
import { freePort, tempDataDir } from './services.js';

export interface Instance {
  readonly baseUrl: string;
  readonly port: number;
  readonly child: ChildProcess;
  readonly dataDir: string;
  /** stdout and stderr so far. */
  output: string;
  /** stdout alone so far (at a terminal, stdout and stderr are one stream: see `output`). */
  stdout: string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

export interface InstanceOptions {
  /** Reuse a port (a restart). */
  port?: number;
  dataDir?: string;
  /** Run under a pseudo-terminal, as a person at a shell does. */
  terminal?: boolean;
  /** Started once its start-up line is printed (the default), or once it answers `/healthz/live` (for a LOG_LEVEL that drops that line). */
  ready?: 'start-up line' | 'live';
}

/**
 * The instances of a test share its database, each with a DATA_DIR of its own: they need one key
 * to open the signing keys stored there (docs/signing-keys.md), as instances in production do.
 */
export const TEST_KEYS_ENCRYPTION_KEY = Buffer.alloc(32, 0x5a).toString('base64');

/** Starts `node dist/launch.cjs` and waits until it has started. */
export async function startInstance(env: Record<string, string>, options: InstanceOptions = {}): Promise<Instance> {
  const port = options.port ?? await freePort();
  const dataDir = options.dataDir ?? tempDataDir('oauth-instance');
  const baseUrl = `http://localhost:${port}`;
  const command: [string, string[]] = options.terminal
    ? ['script', ['--quiet', '--return', '--command', `'${process.execPath}' dist/launch.cjs`, '/dev/null']]
    : [process.execPath, ['dist/launch.cjs']];
  const child = spawn(command[0], command[1], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'test', PORT: String(port), BASE_URL: baseUrl, DATA_DIR: dataDir, KEYS_ENCRYPTION_KEY: TEST_KEYS_ENCRYPTION_KEY, JWKS_FILE: fixtureJwksFile(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const instance: Instance = { baseUrl, port, child, dataDir, output: '', stdout: '', exited };
  child.stdout!.on('data', (chunk: Buffer) => {
    instance.output += chunk.toString('utf8');
    instance.stdout += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => { instance.output += chunk.toString('utf8'); });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`instance did not start:\n${instance.output}`)), 60_000);
    const started = () => { clearTimeout(timer); resolve(); };
    if (options.ready === 'live') {
      const poll = () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        fetch(`${baseUrl}/healthz/live`).then(async (res) => { await res.arrayBuffer(); if (res.ok) started(); else setTimeout(poll, 100); }, () => setTimeout(poll, 100));
      };
      poll();
    } else {
      child.stdout!.on('data', () => { if (instance.output.includes('OAuth service at')) started(); });
    }
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
