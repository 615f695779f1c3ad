/**
 * The administration CLI: `node dist/cli.js <command> [arguments]` (docs/operations.md →
 * "Administration"). With DATABASE_URL it works while the service runs, and the next request
 * sees the change; on the embedded database (no DATABASE_URL) stop the server first: one
 * process at a time owns DATA_DIR.
 *
 * Exit codes: 0 done; 1 refused (no such user or client, a value that cannot be used, the
 * database unreachable or in use, a change that ran out of time and was rolled back, a bad
 * configuration variable, a key rotation that cannot be made now); 2 a wrong command line (unknown command or option, a missing or
 * extra argument), with the usage.
 */
import { ClientInputError } from './clients/client-store.js';
import { UserInputError } from './accounts/user-store.js';
import { NotFoundError } from './admin/not-found.js';
import { DatabaseError } from './cli/admin.js';
import { ArgumentError, UsageError } from './cli/args.js';
import { AUDIT_VERBS } from './cli/audit.js';
import { CLIENT_VERBS } from './cli/clients.js';
import { KEY_VERBS } from './cli/keys.js';
import { RESOURCE_VERBS } from './cli/resources.js';
import { SETUP_VERBS } from './cli/setup.js';
import { TOKEN_VERBS } from './cli/tokens.js';
import { USER_VERBS } from './cli/users.js';
import { operatorContext } from './cli/verb.js';
import type { Verb, VerbTable } from './cli/verb.js';
import { ConfigError } from './config.js';
import { DatabaseInUseError } from './store/embedded-postgres.js';
import { ResourceInputError } from './config/resources.js';
import { KeyRotationError } from './store/signing-keys.js';

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

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    process.stdin.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; }).on('end', () => resolve(text)).on('error', reject);
  });
}

async function run(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const verb = name !== undefined && Object.hasOwn(VERBS, name) ? VERBS[name] : undefined;
  if (!verb) {
    if (name === 'help' || name === '--help') {
      console.log(overview()); // asked for: stdout, so `help | less` shows it
      return 0;
    }
    if (name !== undefined) console.error(`unknown command "${name}"`);
    console.error(overview());
    return 2;
  }
  if (args.includes('--help')) {
    console.log(`${usageOf(name!, verb)}\n${verb.summary}`);
    return 0;
  }
  try {
    console.log(await verb.run(args, { stdin: readStdin, context: operatorContext() }));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${name}: ${error.message}\n${usageOf(name!, verb)}`);
      return 2;
    }
    console.error(`${name}: ${(error as Error).message}`);
    // A system error (ENOENT, ENOTDIR, EACCES, EEXIST…) names the path in its message: one line is enough.
    const refused = REFUSALS.some((type) => error instanceof type) || /^E[A-Z]+$/.test(String((error as { code?: unknown }).code));
    if (!refused) console.error(error); // not the operator's doing: the stack helps whoever fixes it
    return 1;
  }
}

process.exitCode = await run(process.argv.slice(2));
