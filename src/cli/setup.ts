/**
 * Setting a deployment up: `db:migrate` (apply the SQL migrations; the service also applies
 * them when it starts) and `keys:generate` (a private JWKS for JWKS_FILE, and a cookie key).
 *
 * @example node dist/cli.js keys:generate --out jwks.json
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { generateSigningKey } from '../store/keys.js';
import { migrate } from '../store/migrate.js';
import { withDatabase } from './admin.js';
import { parse, UsageError } from './args.js';
import type { VerbTable } from './verb.js';

export const SETUP_VERBS: VerbTable = {
  'db:migrate': {
    usage: '',
    summary: 'apply the database migrations not applied yet',
    async run(args) {
      parse(args, [], {});
      const applied = await withDatabase((db) => db.withConnection((sql) => migrate(sql)), { migrated: false });
      return applied.length ? `applied ${applied.join(', ')}` : 'database is up to date';
    },
  },
  'keys:generate': {
    usage: '--out <file>',
    summary: 'write a private JWKS (for JWKS_FILE) and print a cookie key (for COOKIE_KEYS)',
    async run(args) {
      const { values } = parse(args, [], { out: { type: 'string' } });
      if (!values.out) throw new UsageError('missing --out <file> for the JWKS');
      fs.writeFileSync(values.out, JSON.stringify({ keys: [generateSigningKey()] }, null, 2), { mode: 0o600, flag: 'wx' });
      return `wrote a private JWKS to ${values.out} (set JWKS_FILE to it)\nCOOKIE_KEYS=${randomBytes(32).toString('base64url')}`;
    },
  },
};
