/**
 * The administration CLI as operators run it (`node dist/cli.js …`, built by buildDist), and
 * what a clean failure looks like: a non-zero exit, the message on stderr, no stack trace.
 *
 * @example const run = await runCli(['users:list', '--json'], { DATABASE_URL }); JSON.parse(run.stdout);
 */
import { afterAll, beforeAll, expect } from '@jest/globals';
import { buildDist } from './build.js';
import { startReceiver } from './receiver.js';
import type { Receiver } from './receiver.js';
import { runNode } from './run-node.js';
import type { NodeRun } from './run-node.js';
import { startTestApp } from './test-app.js';
import type { TestApp } from './test-app.js';

/** The first start of an embedded database initialises it, which takes a while. */
export const EMBEDDED_TIMEOUT = 120_000;

export function runCli(args: string[], env: Record<string, string>, options: { input?: string; timeoutMs?: number } = {}): Promise<NodeRun> {
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

/** For one test file: builds dist/, starts the service, a receiver and the CLI before its tests; stops them after. */
export function serviceWithCli(env: Record<string, string> = {}): ServiceWithCli {
  const setup = {} as ServiceWithCli;
  beforeAll(async () => {
    await buildDist();
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
