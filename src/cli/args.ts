/**
 * Reading a verb's arguments, strictly: every option known, each named positional present and
 * none left over. A mistake in the command line is a {@link UsageError} (exit 2, with the verb's
 * usage); a value the command cannot use is an {@link ArgumentError} (exit 1).
 *
 * @example const { values, positionals: [name] } = parse(args, ['user'], { json: { type: 'boolean' } });
 */
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';

/** The command line itself is wrong: unknown option, missing or extra argument. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** An argument's value cannot be used (a bad date, a limit out of range, an unknown event name). */
export class ArgumentError extends Error {
  override name = 'ArgumentError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * The command line made plain for parseArgs, which would read it wrong in three ways:
 * - a value that starts with `-` (a client_id may: base64url) would be taken for options, so
 *   each option's value is joined to it (`--client=<id>`) and the positionals follow `--`;
 * - an empty value (`--client "$UNSET"`) would read as no option at all, and `tokens:revoke
 *   --user alice --client ""` would end every grant of alice's: refused;
 * - an option given twice would keep the last silently: refused, but for `multiple` ones.
 */
function plain(args: string[], options: Options): string[] {
  const named: string[] = [];
  const positionals: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = arg.slice(2, equals === -1 ? undefined : equals);
    const option = Object.hasOwn(options, name) ? options[name] : undefined;
    if (option && !option.multiple && seen.has(name)) throw new UsageError(`--${name} is given more than once`);
    seen.add(name);
    if (option?.type !== 'string') {
      named.push(arg); // a flag, or an unknown option parseArgs names in its refusal
      continue;
    }
    const value = equals === -1 ? args[++i] : arg.slice(equals + 1);
    if (value === undefined || value === '') throw new UsageError(`--${name} needs a value${value === '' ? ', and was given an empty one' : ''}`);
    // `--password --password-stdin` is a forgotten value, not a password (as parseArgs would say).
    if (equals === -1 && value.startsWith('--')) throw new UsageError(`--${name} needs a value; for one that starts with --, write --${name}=${value}`);
    named.push(`--${name}=${value}`);
  }
  return [...named, '--', ...positionals];
}

export function parse<const O extends Options>(args: string[], names: readonly string[], options: O) {
  let parsed;
  try {
    parsed = parseArgs({ args: plain(args, options), options, allowPositionals: true, strict: true });
  } catch (error) {
    // node:util's own messages name the option ("Unknown option '--admin'", "Option '--user <value>' argument missing").
    const code = String((error as { code?: unknown }).code);
    const unknown = /^Unknown option '([^']*)'/.exec((error as Error).message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown !== undefined) {
      // node:util's own wording leaves a quote unclosed.
      throw new UsageError(`Unknown option '${unknown}' (an argument that starts with - goes after --, as in: -- ${unknown})`);
    }
    if (code.startsWith('ERR_PARSE_ARGS_')) throw new UsageError((error as Error).message);
    throw error;
  }
  const { positionals } = parsed;
  if (positionals.length < names.length) throw new UsageError(`missing <${names[positionals.length]}>`);
  if (positionals.length > names.length) throw new UsageError(`unexpected argument "${positionals[names.length]}"`);
  return parsed;
}

/** The one argument of a verb that takes nothing else (`users:disable <user>`). */
export function onlyArgument(args: string[], name: string): string {
  return parse(args, [name], {}).positionals[0]!;
}

/**
 * The password of `user:create` and `users:set-password`: from stdin with `--password-stdin`
 * (one trailing newline dropped), so that it appears in no process list or shell history; or,
 * less safely, from `--password`. Exactly one of the two.
 */
export async function passwordOf(values: { password?: string | undefined; 'password-stdin'?: boolean | undefined }, stdin: () => Promise<string>): Promise<string | undefined> {
  if (values['password-stdin']) {
    if (values.password !== undefined) throw new UsageError('give --password or --password-stdin, not both');
    const password = (await stdin()).replace(/\r?\n$/, '');
    if (password === '') throw new UsageError('--password-stdin: nothing was read from stdin');
    return password;
  }
  return values.password || undefined;
}
