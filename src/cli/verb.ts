/**
 * One CLI command. Each noun's file (users.ts, clients.ts, tokens.ts, audit.ts, …) exports a
 * table of its verbs; src/cli.ts joins the tables, like oidc-provider's route table.
 *
 * @example export const TOKEN_VERBS: VerbTable = { 'tokens:revoke': { usage, summary, run } };
 */
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { OPERATOR } from '../audit/audit-log.js';
import type { AuditContext } from '../audit/audit-log.js';

/** Where a command writes: the process's stdout or stderr, or a caller's capture. */
export interface CliOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** What a command may use besides its arguments. */
export interface CliIo {
  /** All of stdin (for `--password-stdin`). */
  stdin(): Promise<string>;
  /** Who runs this command, for the audit trail. */
  readonly context: AuditContext;
  /** The environment its configuration is read from (config.ts). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where its audit lines go (stdout stays the command's). */
  readonly stderr: CliOutput;
}

export interface Verb {
  /** Its arguments, as `usage:` shows them. */
  readonly usage: string;
  readonly summary: string;
  /** Resolves to what is printed on stdout; throws to fail (see src/cli.ts for the exit codes). */
  run(args: string[], io: CliIo): Promise<string>;
}

export type VerbTable = Readonly<Record<string, Verb>>;

/** The OS account running the CLI; a uid when it has no name (a container without a passwd entry). */
function osUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? 'unknown'}`;
  }
}

/**
 * The audit context of one CLI command: actor `operator`, the OS user in the detail, and one
 * fresh request id shared by every row the command writes (a delete and the revocations it caused).
 */
export function operatorContext(): AuditContext {
  return { actor: OPERATOR, requestId: `cli-${randomUUID()}`, detail: { os_user: osUser() } };
}
