/**
 * Administration commands (run through npm scripts):
 *
 *   npm run user:create -- --username alice --password '…' --email alice@example.com --full-name 'Alice Example'
 *   npm run db:migrate
 *   npm run keys:generate -- --out jwks.json
 *
 * In the embedded default the database belongs to one process: stop the server first.
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createUserStore, UserInputError } from './accounts/user-store.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './store/database.js';
import { DatabaseInUseError } from './store/embedded-postgres.js';
import type { Database } from './store/database.js';
import { generateSigningKey } from './store/keys.js';
import { migrate } from './store/migrate.js';

class UsageError extends Error {}

async function withDatabase<T>(use: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env);
  const db = await openDatabase(config);
  try {
    await db.withConnection((sql) => migrate(sql));
    return await use(db);
  } finally {
    await db.close();
  }
}

const COMMANDS: Record<string, (args: string[]) => Promise<string>> = {
  async 'user:create'(args) {
    const { values } = parseArgs({
      args,
      options: { username: { type: 'string' }, password: { type: 'string' }, email: { type: 'string' }, 'full-name': { type: 'string' } },
    });
    const missing = ['username', 'password', 'email', 'full-name'].filter((name) => !values[name as keyof typeof values]);
    if (missing.length) throw new UsageError(`missing ${missing.map((name) => `--${name}`).join(', ')}`);
    const user = await withDatabase((db) => createUserStore(db.prisma).create({
      username: values.username!, password: values.password!, email: values.email!, fullName: values['full-name']!,
    }));
    return `created user ${user.username} (${user.id})`;
  },
  async 'db:migrate'() {
    const applied = await withDatabase((db) => db.withConnection((sql) => migrate(sql)));
    return applied.length ? `applied ${applied.join(', ')}` : 'database is up to date';
  },
  async 'keys:generate'(args) {
    const { values } = parseArgs({ args, options: { out: { type: 'string' } } });
    if (!values.out) throw new UsageError('missing --out <file> for the JWKS');
    fs.writeFileSync(values.out, JSON.stringify({ keys: [generateSigningKey()] }, null, 2), { mode: 0o600, flag: 'wx' });
    return `wrote a private JWKS to ${values.out} (set JWKS_FILE to it)\nCOOKIE_KEYS=${randomBytes(32).toString('base64url')}`;
  },
};

async function run(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const command = name ? COMMANDS[name] : undefined;
  if (!command) {
    console.error(`usage: cli.js <${Object.keys(COMMANDS).join('|')}> [options]`);
    return 2;
  }
  try {
    console.log(await command(args));
    return 0;
  } catch (error) {
    const known = error instanceof UserInputError || error instanceof UsageError || error instanceof ConfigError
      || error instanceof DatabaseInUseError
      || String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_') || (error as { code?: string }).code === 'EEXIST';
    console.error(`${name}: ${(error as Error).message}`);
    if (!known) console.error(error);
    return 1;
  }
}

process.exitCode = await run(process.argv.slice(2));
