/**
 * Setting a deployment up: `db:migrate` (apply the SQL migrations; the service also applies
 * them when it starts). `keys:generate` is with the other key verbs (cli/keys.ts).
 *
 * @example node dist/cli.js db:migrate
 */
import { migrate } from '../store/migrate.js';
import { withDatabase } from './admin.js';
import { parse } from './args.js';
import type { VerbTable } from './verb.js';

export const SETUP_VERBS: VerbTable = {
  'db:migrate': {
    usage: '',
    summary: 'apply the database migrations not applied yet',
    async run(args, io) {
      parse(args, [], {});
      const applied = await withDatabase(io, (db) => db.withConnection((sql) => migrate(sql)), { migrated: false });
      return applied.length ? `applied ${applied.join(', ')}` : 'database is up to date';
    },
  },
};
