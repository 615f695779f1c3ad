/**
 * The administration CLI, and what a clean failure looks like: a non-zero exit, the message on
 * stderr, no stack trace. {@link runCli} runs a command line in this process (src/cli/run.ts,
 * what `node dist/cli.js` runs: the same commands, exit codes and output, without a Node start
 * and a module load per command); {@link spawnCli} runs `node dist/cli.js` itself (built by
 * buildDist), for what only a process shows: its exit status, the lock between processes.
 *
 * @example const run = await runCli(['users:list', '--json'], { DATABASE_URL }); JSON.parse(run.stdout);
 */
import { afterAll, beforeAll, expect } from '@jest/globals';
import { runCli as run } from '../../src/cli/run.js';
import { startReceiver } from './receiver.js';
import type { Receiver } from './receiver.js';
import { runNode } from './run-node.js';
import type { NodeRun } from './run-node.js';
import { startTestApp } from './test-app.js';
import type { TestApp } from './test-app.js';

/** The first start of an embedded database initialises it, which takes a while. */
export const EMBEDDED_TIMEOUT = 120_000;

/** One command line in this process, with exactly `env` as its environment and `input` as its stdin. */
export async function runCli(args: string[], env: Record<string, string>, { input }: { input?: string } = {}): Promise<NodeRun> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    env,
    stdin: async () => input ?? '',
    stdout: { write: (text: string) => { stdout += text; } },
    stderr: { write: (text: string) => { stderr += text; } },
  });
  return { code, stdout, stderr, timedOut: false };
}

/** `node dist/cli.js` with exactly `env` (plus PATH); killed if it outlives `timeoutMs`. */
export function spawnCli(args: string[], env: Record<string, string>, options: { input?: string; timeoutMs?: number } = {}): Promise<NodeRun> {
  return runNode('dist/cli.js', args, env, options.timeoutMs ?? 60_000, options.input);
}

/** A run that succeeded (exit 0); otherwise fails with everything it printed. */
export function expectSuccess(run: NodeRun): NodeRun {
  if (run.code !== 0) throw new Error(`exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  return run;
}

/** A failure the operator can act on: non-zero exit (`code` if given), the message on stderr, no stack trace. */
export function expectCleanFailure(run: NodeRun, message: string | RegExp, code?: number) {
  expect(run.timedOut).toBe(false);
  expect(run.code).not.toBe(0);
  expect(run.code).not.toBeNull();
  if (code !== undefined) expect(run.code).toBe(code);
  expect(run.stderr).toEqual(typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message));
  expect(run.stderr).not.toMatch(/^\s+at /m);
}

/** The CLI against a running test app's PostgreSQL (DATABASE_URL mode, the service up). */
export function cliFor(t: { env: Record<string, string> }) {
  return (args: string[], input?: string) => runCli(args, { DATABASE_URL: t.env.DATABASE_URL!, DATA_DIR: t.env.DATA_DIR! }, { input });
}

/** The audit lines a CLI run wrote (on stderr, one JSON object a line). */
export function auditLines(run: NodeRun): Record<string, unknown>[] {
  return run.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === 'audit');
}

export interface ServiceWithCli {
  /** The service, running on PostgreSQL and Redis (webhooks to private networks allowed). */
  t: TestApp;
  /** The CLI against its database. */
  cli: ReturnType<typeof cliFor>;
  /** A webhook receiver. */
  receiver: Receiver;
}

/** For one test file: starts the service, a receiver and the CLI before its tests; stops them after. */
export function serviceWithCli(env: Record<string, string> = {}): ServiceWithCli {
  const setup = {} as ServiceWithCli;
  beforeAll(async () => {
    setup.t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...env } });
    setup.cli = cliFor(setup.t);
    setup.receiver = await startReceiver();
  }, 120_000);
  afterAll(async () => {
    await setup.t?.close();
    await setup.receiver?.close();
  });
  return setup;
}
