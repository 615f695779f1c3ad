/**
 * What unnamed statements cost against named (prepared once per connection) ones: the service's
 * hot read of an access token with its grant, user and client (store/hot-reads.ts, as userinfo
 * reads it), through the service's own `db.sql` (store/database.ts), 16 lookups in flight, in
 * three set-ups measured in turns in one run, so the ratios compare like with like:
 *
 * | set-up                  | DATABASE_URL          | statements                               |
 * |-------------------------|-----------------------|------------------------------------------|
 * | direct, named           | PostgreSQL            | named `hot_<n>`, planned once a connection |
 * | direct, unnamed         | PostgreSQL            | unnamed (parsed and planned every time)  |
 * | PgBouncer, unnamed      | a private PgBouncer in transaction mode | unnamed (what DATABASE_POOLER=pgbouncer runs) |
 *
 * Prints lookups/s (median of the rounds), the ratio to the direct, named set-up, and this
 * process's CPU time a lookup (the driver's side of the cost; the server's is the rest). The whole
 * service's rows through PgBouncer are `npm run bench -- --mode pg,pgbouncer`.
 *
 * Usage: npm run bench:statements [-- --seconds 3 --rounds 3]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../dist/store/database.js';
import { createHotReads } from '../dist/store/hot-reads.js';
import { migrate } from '../dist/store/migrate.js';
import { boundsCommand } from '../dist/store/pooler.js';
import { startPgbouncer } from './lib/pgbouncer.mjs';
import { POSTGRES_ADMIN_URL } from './lib/service.mjs';
import { fmt, formatTable, median } from './lib/stats.mjs';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, rounds: { type: 'string', default: '3' } } });
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const IN_FLIGHT = 16;
const TIMEOUTS = { databaseConnectMs: 5000, databaseStatementMs: 2000, databaseIdleInTransactionMs: 10_000 };

async function query(url, text, params = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, params);
  } finally {
    await client.end();
  }
}

/** One user, client, grant and access token: what a userinfo request reads. */
async function seed(url) {
  const user = randomUUID();
  await query(url, `INSERT INTO users (id, username, email, full_name, password_hash) VALUES ($1, 'bench', 'bench@example.com', 'Bench', 'x')`, [user]);
  await query(url, `INSERT INTO clients (client_id, client_secret_hash, client_name, redirect_uri) VALUES ('bench-client', 'x', 'Bench', 'http://127.0.0.1:9/cb')`);
  await query(url, `INSERT INTO oidc_models (type, id, payload, expires_at) VALUES ('Grant', 'bench-grant', $1, now() + interval '1 hour')`, [{ accountId: user, clientId: 'bench-client' }]);
  await query(url, `INSERT INTO oidc_models (type, id, payload, grant_id, expires_at) VALUES ('AccessToken', 'bench-token', $1, 'bench-grant', now() + interval '1 hour')`,
    [{ accountId: user, clientId: 'bench-client', grantId: 'bench-grant', kind: 'AccessToken' }]);
}

/** Lookups per second over SECONDS, IN_FLIGHT at a time, and this process's CPU time per lookup (µs). */
async function measure(db) {
  const hot = createHotReads(db.sql);
  let lookups = 0;
  const cpu = process.cpuUsage();
  const until = Date.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (Date.now() < until) {
      if (!(await hot.findModel('AccessToken', 'bench-token'))) throw new Error('the seeded token was not found');
      lookups += 1;
    }
  }));
  const { user, system } = process.cpuUsage(cpu);
  return { perSecond: lookups / SECONDS, cpuUs: (user + system) / lookups };
}

async function main() {
  const name = `oauth_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  await query(POSTGRES_ADMIN_URL, `CREATE DATABASE "${name}"`);
  const direct = Object.assign(new URL(POSTGRES_ADMIN_URL), { pathname: `/${name}` }).toString();
  let bouncer;
  const opened = [];
  try {
    await query(direct, boundsCommand(decodeURIComponent(new URL(direct).username) || 'postgres', name, TIMEOUTS));
    bouncer = await startPgbouncer({ upstream: POSTGRES_ADMIN_URL });
    const setups = {
      'direct, named': { databaseUrl: direct },
      'direct, unnamed': { databaseUrl: direct, databaseDirectUrl: direct, databasePooler: 'pgbouncer' },
      'PgBouncer, unnamed': { databaseUrl: bouncer.urlFor(direct), databaseDirectUrl: direct, databasePooler: 'pgbouncer' },
    };
    const dbs = {};
    for (const [label, options] of Object.entries(setups)) {
      dbs[label] = await openDatabase({ ...options, dataDir: '', timeouts: TIMEOUTS });
      opened.push(dbs[label]);
    }
    await dbs['direct, named'].withConnection((sql) => migrate(sql));
    await seed(direct);
    const rates = Object.fromEntries(Object.keys(setups).map((label) => [label, []]));
    for (const db of Object.values(dbs)) await measure(db); // warm-up: connections open, statements prepared
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [label, db] of Object.entries(dbs)) {
        rates[label].push(await measure(db));
        process.stderr.write(`[bench] round ${round + 1}, ${label}: ${fmt(rates[label].at(-1).perSecond)}/s\n`);
      }
    }
    const perSecond = (label) => median(rates[label].map((rate) => rate.perSecond));
    const base = perSecond('direct, named');
    console.log(`\nThe hot token read (userinfo's), ${IN_FLIGHT} in flight; median of ${ROUNDS} rounds of ${SECONDS} s, set-ups in turns\n`);
    console.log(formatTable(['set-up', 'lookups/s', 'vs direct, named', 'client CPU µs/lookup'], Object.entries(rates).map(([label, list]) => [
      label, fmt(perSecond(label)), `${(perSecond(label) / base).toFixed(2)}×`, fmt(median(list.map((rate) => rate.cpuUs))),
    ])));
  } finally {
    for (const db of opened) await db.close();
    await bouncer?.stop();
    await query(POSTGRES_ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
