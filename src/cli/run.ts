/**
 * The administration CLI, one command line a call: `node dist/cli.js <command> [arguments]`
 * (docs/operations.md → "Administration"). With DATABASE_URL it works while the service runs, and the next request
 * sees the change; on the embedded database (no DATABASE_URL) stop the server first: one
 * process at a time owns DATA_DIR.
 *
 * Exit codes: 0 done; 1 refused (no such user or client, a value that cannot be used, the
 * database unreachable or in use, a change that ran out of time and was rolled back, a bad
 * configuration variable, a key rotation that cannot be made now); 2 a wrong command line (unknown command or option, a missing or
 * extra argument), with the usage. src/cli.ts runs it as a process; tests call {@link runCli}
 * in theirs (test/helpers/cli.ts).
 *
 * @example process.exitCode = await runCli(['users:list'], { env: process.env, stdin, stdout: process.stdout, stderr: process.stderr });
 */
import { inspect } from 'node:util';
import { ClientInputError } from '../clients/client-store.js';
import { UserInputError } from '../accounts/user-store.js';
import { NotFoundError } from '../admin/not-found.js';
import { DatabaseError } from './admin.js';
import { ArgumentError, UsageError } from './args.js';
import { AUDIT_VERBS } from './audit.js';
import { CLIENT_VERBS } from './clients.js';
import { KEY_VERBS } from './keys.js';
import { RESOURCE_VERBS } from './resources.js';
import { SETUP_VERBS } from './setup.js';
import { TOKEN_VERBS } from './tokens.js';
import { USER_VERBS } from './users.js';
import { operatorContext } from './verb.js';
import type { CliIo, CliOutput, Verb, VerbTable } from './verb.js';
import { ConfigError } from '../config.js';
import { DatabaseInUseError } from '../store/embedded-postgres.js';
import { ResourceInputError } from '../resources/resource-declaration.js';
import { KeyRotationError } from '../keys/signing-keys.js';

const VERBS: VerbTable = { ...USER_VERBS, ...CLIENT_VERBS, ...RESOURCE_VERBS, ...TOKEN_VERBS, ...AUDIT_VERBS, ...SETUP_VERBS, ...KEY_VERBS };

/** Errors an operator can act on: said in one line, without a stack trace. */
const REFUSALS = [NotFoundError, ArgumentError, UserInputError, ClientInputError, ResourceInputError, ConfigError, DatabaseInUseError, DatabaseError, KeyRotationError];

const usageOf = (name: string, verb: Verb) => `usage: node dist/cli.js ${name}${verb.usage ? ` ${verb.usage}` : ''}`;

function overview(): string {
  const width = Math.max(...Object.keys(VERBS).map((name) => name.length));
  const lines = Object.entries(VERBS).map(([name, verb]) => `  ${name.padEnd(width)}  ${verb.summary}`);
  return `usage: node dist/cli.js <command> [arguments]   commands: ${Object.keys(VERBS).join(', ')}\n\n${lines.join('\n')}\n\n`
    + "'node dist/cli.js <command> --help' shows a command's arguments.";
}

/** What one run is given: its environment, stdin, and where its output goes. */
export interface CliProcess extends Pick<CliIo, 'env' | 'stdin' | 'stderr'> {
  readonly stdout: CliOutput;
}

/** Runs one command line and resolves with its exit code (the codes above). */
export async function runCli(argv: string[], io: CliProcess): Promise<number> {
  const out = (text: string) => { io.stdout.write(`${text}\n`); };
  const err = (text: string) => { io.stderr.write(`${text}\n`); };
  const [name, ...args] = argv;
  const verb = name !== undefined && Object.hasOwn(VERBS, name) ? VERBS[name] : undefined;
  if (!verb) {
    if (name === 'help' || name === '--help') {
      out(overview()); // asked for: stdout, so `help | less` shows it
      return 0;
    }
    if (name !== undefined) err(`unknown command "${name}"`);
    err(overview());
    return 2;
  }
  if (args.includes('--help')) {
    out(`${usageOf(name!, verb)}\n${verb.summary}`);
    return 0;
  }
  try {
    out(await verb.run(args, { stdin: io.stdin, env: io.env, stderr: io.stderr, context: operatorContext() }));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      err(`${name}: ${error.message}\n${usageOf(name!, verb)}`);
      return 2;
    }
    err(`${name}: ${(error as Error).message}`);
    // A system error (ENOENT, ENOTDIR, EACCES, EEXIST…) names the path in its message: one line is enough.
    const refused = REFUSALS.some((type) => error instanceof type) || /^E[A-Z]+$/.test(String((error as { code?: unknown }).code));
    if (!refused) err(inspect(error)); // not the operator's doing: the stack helps whoever fixes it
    return 1;
  }
}

