/**
 * Runs a built entry point (`dist/launch.cjs`, `dist/cli.js`) as users do, with exactly the
 * environment given (plus PATH), and kills it if it outlives `timeoutMs`. `input`, when given,
 * is written to its stdin (which is otherwise closed).
 *
 * @example const { code, stderr } = await runNode('dist/cli.js', ['db:migrate'], { DATABASE_URL });
 */
import { spawn } from 'node:child_process';
import { ROOT } from './build.js';

export interface NodeRun {
  /** Exit code; null when killed (see `timedOut`). */
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export function runNode(script: string, args: string[], env: Record<string, string>, timeoutMs = 60_000, input?: string): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) child.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
    child.on('error', (error) => { clearTimeout(timer); reject(error); });
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr, timedOut }); });
  });
}
