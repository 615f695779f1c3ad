/**
 * `npm run bench`: the service against its anchors, measured in one run, printed as one table.
 *
 * Builds the service, then starts each server under test in its own process — bare Koa, the
 * stock oidc-provider with a Map adapter (P), and this service (`node dist/launch.cjs`, as
 * `npm start` runs it) on PostgreSQL + Redis, through PgBouncer + Redis, and embedded, the
 * service's modes side by side and each row measured on them in turns — and drives each from another
 * process (Debian's wrk when installed, else autocannon; 32 connections; fresh login flows: 8
 * browsers). Each figure: a warm-up,
 * then the median of 3 runs of 8 s. Costs per request are counted on the stores' side
 * (bench/lib/counters.mjs) and from /proc (the server's CPU time and RSS); a row's notes name the
 * deadlocks and rolled-back transactions PostgreSQL counted over its runs.
 *
 * With `--against <git-ref>` or `--variants NAME=a,b` the service is measured as two sides, A
 * and B, taking turns row by row over `--rounds` rounds (bench/lib/ab-plan.mjs), and a second
 * table compares them (bench/lib/ab-report.mjs); the anchors are measured once.
 *
 * With `--markdown file` the header line and the table also replace the part of that page
 * between its marker comments (bench/lib/markdown.mjs): `--markdown docs/performance.md`.
 *
 * Usage: npm run bench [-- --quick] [--mode pg,pgbouncer,embedded|all] [--rows userinfo,exchange,…]
 *        [--seed-tokens N] [--connections 32] [--seconds 8] [--runs 3] [--warmup 3] [--no-build]
 *        [--json file] [--markdown file] [--webhook-latency] [--cpu-prof dir] [--env NAME=value …]
 *        [--load wrk|autocannon] [--against git-ref | --variants NAME=a,b] [--rounds 2]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { alternate, comparisonPlan, comparisonTitle, DEFAULT_ROUNDS } from './lib/ab-plan.mjs';
import { comparisonTable, sideResults } from './lib/ab-report.mjs';
import { buildAgainst, describeBuild, resolveRef } from './lib/against-build.mjs';
import { startBareKoa, startStockProvider } from './lib/anchors.mjs';
import { defaultLoad, ROOT, runDriver } from './lib/processes.mjs';
import { ROWS, ROW_IDS } from './lib/rows.mjs';
import { seedTokens } from './lib/seed-tokens.mjs';
import { MODES, PER_SERVICE, startService } from './lib/service.mjs';
import { PGBOUNCER_PATH } from './lib/pgbouncer.mjs';
import { summariseProfiles } from './lib/profile-summary.mjs';
import { markdownBlock, markedFileProblem, writeMarked } from './lib/markdown.mjs';
import { headerLine, resultsTable, startRssLines, targetLines } from './lib/report.mjs';
import { fmt, median, medianRun, perRequest } from './lib/stats.mjs';

const USAGE = `Usage: npm run bench [-- --quick] [--mode ${MODES.join(',')}|all] [--rows ${ROW_IDS.join(',')}]
       [--seed-tokens N] [--connections 32] [--seconds 8] [--runs 3] [--warmup 3] [--no-build]
       [--json file] [--markdown file] [--webhook-latency] [--cpu-prof dir] [--env NAME=value …]
       [--load wrk|autocannon] [--against git-ref | --variants NAME=a,b] [--rounds ${DEFAULT_ROUNDS}]
  --markdown file: rewrites the part of file between <!-- bench:table:start --> and
    <!-- bench:table:end --> with this run's header line and table (docs/performance.md); the rest is kept.
  --against git-ref: A/B of this checkout (A) against the ref's build (B), run from a temporary worktree.
  --variants NAME=a,b: A/B of this build with the service variable NAME=a (A) and NAME=b (B).
  --rounds N: with either, each row is measured N times per side, A then B, then B then A, …`;

/** A bad option: what is wrong and the usage, exit 2 (no stack). */
function usage(message) {
  process.stderr.write(`bench: ${message}\n${USAGE}\n`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({ options: {
    help: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    mode: { type: 'string', default: 'all' },
    rows: { type: 'string', default: ROW_IDS.join(',') },
    'seed-tokens': { type: 'string', default: '0' },
    connections: { type: 'string', default: '32' },
    seconds: { type: 'string' },
    runs: { type: 'string' },
    warmup: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
    json: { type: 'string' },
    markdown: { type: 'string' },
    'webhook-latency': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    env: { type: 'string', multiple: true, default: [] },
    load: { type: 'string', default: defaultLoad() },
    against: { type: 'string' },
    variants: { type: 'string' },
    rounds: { type: 'string' },
  } });
} catch (error) {
  usage(error.message);
}
const { values: options } = parsed;
if (options.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

const rows = options.rows.split(',').map((row) => row.trim()).filter(Boolean);
for (const row of rows) if (!ROWS[row]) usage(`--rows: unknown row "${row}" (rows: ${ROW_IDS.join(', ')})`);
// `both` is the old name of `all` (from when there were two modes).
const every = options.mode === 'all' || options.mode === 'both';
let modes = every ? [...MODES] : options.mode.split(',').map((mode) => mode.trim());
for (const mode of modes) if (!MODES.includes(mode)) usage(`--mode takes ${MODES.join(', ')} (comma-separated) or all, got "${mode}"`);
const noPgbouncer = modes.includes('pgbouncer') && !fs.existsSync(PGBOUNCER_PATH);
if (noPgbouncer && !every) usage(`--mode pgbouncer: ${PGBOUNCER_PATH} is missing (apt-get install pgbouncer)`);
if (!['wrk', 'autocannon'].includes(options.load)) usage('--load must be wrk or autocannon');
const seed = Number(options['seed-tokens']);
if (!Number.isInteger(seed) || seed < 0) usage('--seed-tokens must be a whole number');
// Checked now, not after a quarter of an hour of measuring.
const markdownProblem = options.markdown === undefined ? undefined : markedFileProblem(options.markdown);
if (markdownProblem) usage(`--markdown: ${markdownProblem}`);

const serviceEnv = Object.fromEntries(options.env.map((pair) => {
  const at = pair.indexOf('=');
  if (at < 1) usage(`--env takes NAME=value, got "${pair}"`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}));

let comparison;
try {
  comparison = comparisonPlan(options, { env: serviceEnv, resolveRef, describe: describeBuild });
} catch (error) {
  usage(error.message);
}
for (const name of PER_SERVICE) {
  const givenBy = Object.hasOwn(serviceEnv, name) ? '--env' : comparison?.sides.some((side) => Object.hasOwn(side.env, name)) ? '--variants' : undefined;
  if (givenBy) usage(`${givenBy} ${name}: the bench gives each service its own ${PER_SERVICE.join(', ')}`);
}

/** `--name`'s whole number (its default when absent), at least `min`. */
function count(name, fallback, min = 1) {
  const value = Number(options[name] ?? fallback);
  if (!Number.isInteger(value) || value < min) usage(`--${name} must be a whole number of at least ${min}, got "${options[name]}"`);
  return value;
}

const settings = {
  quick: options.quick,
  connections: count('connections', 32),
  seconds: count('seconds', options.quick ? 2 : 8),
  warmup: count('warmup', options.quick ? 1 : 3, 0),
  runs: count('runs', options.quick ? 1 : 3),
  load: options.load,
  tmpDir: fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-bench-run-')),
};
const log = (line) => process.stderr.write(`[bench] ${line}\n`);
// Said only once every option has passed: a bad one is the only line a refused run prints.
if (noPgbouncer) {
  log(`skipping the pgbouncer mode: ${PGBOUNCER_PATH} is missing (apt-get install pgbouncer)`);
  modes = modes.filter((mode) => mode !== 'pgbouncer');
}
const LABELS = { pg: 'this service, Postgres + Redis', pgbouncer: 'this service, PgBouncer + Redis', embedded: 'this service, embedded' };

/**
 * One figure: warm-up, inputs for every run prepared, store counters settled and read, the
 * runs (CPU time and peak RSS of `server` over them), counters settled and read again.
 */
async function measure(target, rowId, { server = target.server, counters = target.counters, title = rowId } = {}) {
  const row = ROWS[rowId];
  const driver = row.driver ?? (settings.load === 'wrk' ? 'wrk' : 'cannon');
  const plan = row.plan(target, settings);
  const warm = await runDriver(driver, await plan.warmup());
  const specs = await plan.runs(warm.perSecond);
  await counters?.settle();
  const before = counters ? await counters.read() : {};
  const cpuBefore = server.usage().cpuUs;
  const windowStart = Date.now() - server.startedAt;
  let rss = server.usage().rssBytes;
  const sampler = setInterval(() => { rss = Math.max(rss, server.usage().rssBytes); }, 200);
  const runs = [];
  try {
    for (const spec of specs) runs.push(await runDriver(driver, spec));
  } finally {
    clearInterval(sampler);
  }
  const cpuUs = server.usage().cpuUs - cpuBefore;
  const profileWindow = { pid: server.pid, fromMs: windowStart, toMs: Date.now() - server.startedAt };
  await counters?.settle();
  const after = counters ? await counters.read() : {};
  const requests = runs.reduce((sum, run) => sum + run.requests + (run.wasted ?? 0), 0); // every request the server answered
  const middle = medianRun(runs);
  const unexpected = runs.reduce((sum, run) => sum + (run.requests - run.served), 0);
  const errors = runs.reduce((sum, run) => sum + (run.errors ?? 0), 0);
  const notes = [];
  if (unexpected) notes.push(`${unexpected} unexpected answers: ${JSON.stringify(runs.map((run) => run.statuses))}`);
  if (errors) notes.push(`${errors} connection errors or timeouts`);
  // What the database refused over the runs: a failed shared write statement is a rollback (then sent again request by request).
  const deadlocks = (after.pgDeadlocks ?? NaN) - (before.pgDeadlocks ?? NaN);
  const rollbacks = (after.pgRollbacks ?? NaN) - (before.pgRollbacks ?? NaN);
  if (deadlocks > 0) notes.push(`${deadlocks} PostgreSQL deadlocks`);
  if (rollbacks > 0) notes.push(`${rollbacks} PostgreSQL transactions rolled back`);
  if (runs.some((run) => run.exhausted)) notes.push(`ran out of fresh inputs after ${runs.map((run) => fmt(run.seconds, 1)).join(', ')} s`);
  if (row.perFlow) notes.push(`costs per flow (${fmt(runs.reduce((sum, run) => sum + run.httpRequests, 0) / requests, 1)} HTTP requests each)`);
  // The flow driver is Node, on the same cores as the service: its own CPU is part of the picture.
  if (runs.every((run) => run.driverCpuUs !== undefined)) notes.push(`driver ${fmt(runs.reduce((sum, run) => sum + run.driverCpuUs, 0) / requests / 1000, 1)} ms CPU a flow`);
  log(`${target.label} ${title}: ${fmt(median(runs.map((run) => run.perSecond)))}/s ${notes.join('; ')}`);
  return {
    target: target.label,
    row: rowId,
    perSecond: median(runs.map((run) => run.perSecond)),
    p50: middle.p50,
    p99: middle.p99,
    pg: perRequest(before.pg, after.pg, requests),
    pgDeadlocks: deadlocks,
    pgRollbacks: rollbacks,
    redis: perRequest(before.redis, after.redis, requests),
    cpuUs: cpuUs / requests,
    rssMb: rss / 2 ** 20,
    notes,
    profileWindow,
  };
}

async function main() {
  if (!options['no-build']) {
    log('npm run build');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  // The build measured is the checkout as it was built, whatever changes while the rows run.
  const build = describeBuild(ROOT); // undefined outside a git checkout: the table goes without its build
  // Side B of --against runs from its own worktree, built before anything is measured.
  const against = comparison?.kind === 'against' ? await buildAgainst(comparison.sides[1].commit, { log }) : undefined;
  if (against) comparison.sides[1].root = against.dir;
  const results = [];
  const figures = []; // an A/B run's figures, one per side, row and round
  const startRss = {};
  const context = { logDir: settings.tmpDir };
  /** Node's profiler flags for a server whose profile goes to `<--cpu-prof>/<name>`, or none. */
  const profiled = (name) => (options['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options['cpu-prof'], name)}`] : []);
  /** Each measured row's share of the profile (the samples of its runs only, not fixtures or minting). */
  const printProfiles = (label, name, measured = results) => {
    if (!options['cpu-prof']) return;
    for (const result of measured.filter((r) => r.target === label)) {
      console.log(`\n${label}, ${result.row}: CPU profile (${path.resolve(options['cpu-prof'], name)})\n${summariseProfiles(path.resolve(options['cpu-prof'], name), { window: result.profileWindow })}`);
    }
  };

  log('anchor: bare Koa');
  const koa = await startBareKoa(context);
  try {
    const target = { ...koa, kind: 'anchor', label: 'bare Koa' };
    // Any path answers the small body: the discovery row's plan (a GET, no inputs) drives it.
    results.push({ ...(await measure(target, 'discovery', { title: 'small JSON body' })), row: 'small JSON body' });
  } finally {
    await koa.close();
  }

  const anchorRows = rows.filter((row) => !ROWS[row].serviceOnly);
  if (anchorRows.length) {
    log('anchor: stock oidc-provider, Map adapter (P)');
    const provider = await startStockProvider({ ...context, nodeArgs: profiled('stock-provider') });
    try {
      for (const row of anchorRows) results.push(await measure({ ...provider, kind: 'anchor', label: 'P: stock oidc-provider 9, Map' }, row));
    } finally {
      await provider.close();
    }
    printProfiles('P: stock oidc-provider 9, Map', 'stock-provider');
  }

  let argon2Rate = NaN;
  if (rows.includes('login')) {
    log('ceiling: argon2id verifies/s');
    // On the thread pool the service's entry point gives itself (src/launch.cts), or the operator's.
    const { threadPoolSize } = createRequire(import.meta.url)(path.join(ROOT, 'dist', 'launch.cjs'));
    const pool = { UV_THREADPOOL_SIZE: serviceEnv.UV_THREADPOOL_SIZE ?? String(threadPoolSize()) };
    const rates = [];
    for (let i = 0; i < settings.runs; i += 1) rates.push((await runDriver('argon2-rate', { seconds: settings.seconds, concurrency: 8 }, pool)).perSecond);
    argon2Rate = median(rates);
  }

  if (comparison) {
    for (const mode of modes) {
      const label = LABELS[mode];
      log(`${label}: preparing`);
      figures.push(...(await compare(mode, label)));
      for (const side of comparison.sides) printProfiles(`${label}, ${side.id}`, `${mode}-${side.id}`, figures);
    }
  } else {
    results.push(...(await measureModes()));
    for (const mode of modes) printProfiles(LABELS[mode], mode);
  }
  against?.remove();

  const titleOf = (row) => ROWS[row]?.title ?? row;
  const report = {
    header: headerLine(settings),
    table: resultsTable([...results, ...sideResults(figures)], argon2Rate, titleOf),
    after: startRssLines(startRss),
    // An A/B run's sides are not the targets' rows: its verdict is the comparison table.
    targets: comparison ? [] : targetLines(results, argon2Rate, settings),
    comparison: comparison && { title: comparisonTitle(comparison), table: comparisonTable(figures, titleOf) },
  };
  console.log(`\n${report.header}\n`);
  console.log(report.table);
  for (const line of report.after) console.log(line);
  if (report.targets.length) console.log(`\nTargets (docs/performance.md), this run:\n${report.targets.map((line) => `  ${line}`).join('\n')}`);
  if (report.comparison) console.log(`\n${report.comparison.title}\n\n${report.comparison.table}`);
  if (options.json) fs.writeFileSync(options.json, JSON.stringify({ settings, argon2Rate, results, ...(comparison && { comparison: { ...comparison, figures } }) }, null, 2));
  if (options.markdown) writeMarkdown(options.markdown, report, build);
  if (options['webhook-latency']) {
    // Webhook delivery is latency, not throughput: its own script, one event at a time.
    console.log('');
    execFileSync(process.execPath, ['bench/webhook-latency.mjs', '--events', options.quick ? '20' : '100'], { cwd: ROOT, stdio: 'inherit' });
  }
  fs.rmSync(settings.tmpDir, { recursive: true, force: true });

  // The steps of the service's loop above.
  /** The service in `mode`, started from `root` with `env`, its tokens seeded: the target of its rows. */
  async function prepare(mode, label, { root = ROOT, env = serviceEnv, name = mode } = {}) {
    const service = await startService(mode, { ...context, nodeArgs: profiled(name), env, root, name: `service-${name}` });
    startRss[label] = service.server.usage().rssBytes / 2 ** 20;
    try {
      if (seed > 0) {
        log(`seeding ${fmt(seed)} access + ${fmt(seed)} refresh tokens`);
        await seedTokens(service, seed);
      }
    } catch (error) {
      await service.close();
      throw error;
    }
    return { ...service, kind: 'service', label };
  }
  /**
   * Every mode's service at once, each row measured on them in turns (the modes' order reversed
   * from one row to the next): the modes' figures of a row are taken side by side, as an A/B's
   * are, not minutes apart while the machine's other work comes and goes. The figures come back
   * mode by mode, as the table lists them.
   */
  async function measureModes() {
    const services = {};
    const measured = [];
    try {
      for (const mode of modes) {
        log(`${LABELS[mode]}: preparing`);
        services[mode] = await prepare(mode, LABELS[mode]);
      }
      for (const [i, row] of rows.entries()) {
        for (const mode of i % 2 ? [...modes].reverse() : modes) measured.push({ at: [modes.indexOf(mode), i], result: await measureRow(services[mode], row) });
      }
    } finally {
      for (const service of Object.values(services)) await service.close();
    }
    return measured.sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1]).map((m) => m.result);
  }
  /** One row of a prepared service; the 429 row on a second instance with the default limits. */
  async function measureRow(target, row, title = row) {
    if (!ROWS[row].refusing) return measure(target, row, { title });
    const refusing = await target.startRefusing();
    try {
      return await measure({ ...target, refusingBase: refusing.base }, row, { server: refusing.server, title });
    } finally {
      await refusing.stop();
    }
  }
  /** Both sides of the comparison in `mode`, running side by side, their rows measured in turns. */
  async function compare(mode, label) {
    const started = {};
    try {
      for (const side of comparison.sides) started[side.id] = await prepare(mode, `${label}, ${side.id}`, { ...side, name: `${mode}-${side.id}` });
      return await alternate(comparison, rows, async (side, row, round) => ({
        ...(await measureRow(started[side.id], row, `${row}, round ${round}`)), service: label,
      }));
    } finally {
      for (const service of Object.values(started)) await service.close();
    }
  }
}

/** The run's header line and table into `file`, between its markers, with the command and the build that ran (`git describe` when it was built). */
function writeMarkdown(file, report, build) {
  const args = process.argv.slice(2);
  const command = args.length ? `npm run bench -- ${args.join(' ')}` : 'npm run bench';
  try {
    writeMarked(file, markdownBlock({ ...report, command, build }));
    log(`table written into ${file}`);
  } catch (error) {
    log(`--markdown: could not write ${file}: ${error.message}`);
    process.exitCode = 1;
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
