// Generates the Prisma client on install. Prisma's CLI insists on a schema-engine binary it
// would download from Prisma's servers; `generate` never runs it, so any executable will do.
// Migrations are applied by src/store/migrate.ts, never by this engine.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const cli = require.resolve('prisma/build/index.js');
const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1' };
env.PRISMA_SCHEMA_ENGINE_BINARY ??= process.execPath;
execFileSync(process.execPath, [cli, 'generate', '--schema', 'prisma/schema.prisma'], { stdio: 'inherit', env });
