/**
 * Soak: whole flows at a steady rate for a
 * long time against the built service on PostgreSQL and Redis, to show that memory, latency and
 * the stores stay flat.
 *
 * 1. builds, starts `node dist/launch.cjs` on a fresh database and Redis key prefix (removed at the end);
 * 2. unless --rate is given, measures the maximum: closed loops of 1, 2, 4, 8 concurrent flows for
 *    --ramp-seconds in all, and takes half the best flows/s;
 * 3. starts flows at that rate (open loop: a slow service does not slow the arrivals) for
 *    --minutes, printing each minute the service's RSS, p50/p99 of every step, `oidc_models`
 *    rows and Redis keys under the prefix;
 * 4. ends with a verdict: RSS flat within 10 % (minute 2 against the last), p99 of a whole flow
 *    drifting less than 20 % (the flows of the second half together against those of the first,
 *    after minute 1: one minute's p99 is its 10 or 20 slowest flows, and on a shared machine it
 *    moves by half from minute to minute, and by a third between three-minute windows, without
 *    any trend), stores bounded (the last count at most 20 % above the highest of the first
 *    half, after minute 1).
 *
 * A flow: authorize → login → consent → token → userinfo → refresh → revoke → sign_out (see
 * scripts/lib/flow-client.mjs). Tokens live as configured below (code 60 s, access and refresh
 * 300 s), so everything a flow leaves behind expires within the run.
 *
 * Usage: npm run soak -- --minutes 30 [--rate 10] [--ramp-seconds 40] [--embedded]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { runFlow, STEPS } from './lib/flow-client.mjs';
import { build, startService } from './lib/started-service.mjs';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string' },
    'ramp-seconds': { type: 'string', default: '40' },
    users: { type: 'string', default: '8' },
    embedded: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
  },
});
const MINUTES = Number(values.minutes);
const RAMP_MS = Number(values['ramp-seconds']) * 1000;
const MAX_IN_FLIGHT = 256;

const mb = (bytes) => (bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(1));
const ms = (value) => (value === undefined ? '-' : value < 10 ? value.toFixed(1) : value.toFixed(0));

function quantile(sorted, q) {
  if (!sorted.length) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Per-step samples of one minute. */
function newWindow() {
  return { flows: 0, failures: 0, failedSteps: {}, firstFailure: undefined, skipped: 0, samples: Object.fromEntries([...STEPS, 'flow'].map((s) => [s, []])) };
}

if (!values['no-build']) await build();
const users = Array.from({ length: Number(values.users) }, (_, i) => ({ username: `soak${i}`, password: 'correct horse battery' }));
const service = await startService({
  embedded: values.embedded,
  users,
  env: { AUTHORIZATION_CODE_TTL: '60', ACCESS_TOKEN_TTL: '300', REFRESH_TOKEN_TTL: '300' },
});
let stopping = false;
const stop = async (code) => {
  if (stopping) return;
  stopping = true;
  await service.stop();
  process.exit(code);
};
process.on('SIGINT', () => void stop(130));

try {
  const clients = await Promise.all([0, 1, 2, 3].map(() => service.registerClient()));
  let next = 0;
  const pick = () => {
    next += 1;
    return { client: clients[next % clients.length], user: users[next % users.length] };
  };

  let window = newWindow();
  const flow = async () => {
    const { client, user } = pick();
    const started = performance.now();
    try {
      const { timings } = await runFlow(service.baseUrl, client, user);
      window.flows += 1;
      for (const [step, value] of Object.entries(timings)) window.samples[step].push(value);
      window.samples.flow.push(performance.now() - started);
    } catch (error) {
      window.failures += 1;
      const step = error.step ?? 'network';
      window.failedSteps[step] = (window.failedSteps[step] ?? 0) + 1;
      window.firstFailure ??= error.message;
    }
  };

  // 2. The maximum: closed loops, each of `concurrency` flows back to back.
  let rate = values.rate ? Number(values.rate) : undefined;
  if (!rate) {
    let best = 0;
    for (const concurrency of [1, 2, 4, 8]) {
      window = newWindow();
      const deadline = Date.now() + RAMP_MS / 4;
      const began = performance.now();
      await Promise.all(Array.from({ length: concurrency }, async () => { while (Date.now() < deadline) await flow(); }));
      const perSecond = window.flows / ((performance.now() - began) / 1000);
      console.log(`ramp: ${concurrency} concurrent → ${perSecond.toFixed(1)} flows/s (${window.failures} failed${window.firstFailure ? `; first: ${window.firstFailure}` : ''})`);
      best = Math.max(best, perSecond);
    }
    rate = Math.max(0.1, Math.round((best / 2) * 10) / 10);
    console.log(`maximum ≈ ${best.toFixed(1)} flows/s; soaking at half: ${rate} flows/s`);
  }

  // 3. Steady arrivals at `rate` for MINUTES, one report a minute.
  console.log(`soak from ${new Date().toISOString()}: ${MINUTES} min at ${rate} flows/s against ${values.embedded ? 'embedded PGlite + memory' : 'PostgreSQL + Redis'}; machine: ${os.cpus().length} cores, shared (load average shown per minute)`);
  console.log(['min', 'flows', 'fail', 'rss MB', 'load1', ...STEPS.map((s) => `${s} p50/p99`), 'flow p50/p99', 'oidc_models', 'redis keys'].join(' | '));
  window = newWindow();
  const rows = [];
  let inFlight = 0;
  const began = Date.now();
  const interval = 1000 / rate;
  let scheduled = 0;
  const ticker = setInterval(() => {
    // Catch up on arrivals a busy event loop delayed, so the rate holds on average.
    const due = Math.floor((Date.now() - began) / interval) - scheduled;
    for (let i = 0; i < due; i += 1) {
      scheduled += 1;
      if (inFlight >= MAX_IN_FLIGHT) { window.skipped += 1; continue; }
      inFlight += 1;
      void flow().finally(() => { inFlight -= 1; });
    }
  }, Math.max(5, Math.min(100, interval / 2)));

  for (let minute = 1; minute <= MINUTES; minute += 1) {
    await new Promise((resolve) => setTimeout(resolve, began + minute * 60_000 - Date.now()));
    const done = window;
    window = newWindow();
    const sorted = Object.fromEntries(Object.entries(done.samples).map(([step, list]) => [step, [...list].sort((a, b) => a - b)]));
    const models = await service.modelRows().catch(() => undefined);
    const keys = await service.redisKeys().catch(() => undefined);
    const row = {
      minute,
      flows: done.flows,
      failures: done.failures,
      skipped: done.skipped,
      rss: service.rss(),
      load: os.loadavg()[0],
      p50: Object.fromEntries(Object.entries(sorted).map(([s, list]) => [s, quantile(list, 0.5)])),
      p99: Object.fromEntries(Object.entries(sorted).map(([s, list]) => [s, quantile(list, 0.99)])),
      flowTimes: sorted.flow ?? [],
      models: models && Object.values(models).reduce((a, b) => a + b, 0),
      modelsByType: models,
      keys,
    };
    rows.push(row);
    console.log([
      minute, done.flows, done.failures + (done.skipped ? ` (+${done.skipped} skipped)` : ''), mb(row.rss), row.load.toFixed(2),
      ...STEPS.map((s) => `${ms(row.p50[s])}/${ms(row.p99[s])}`), `${ms(row.p50.flow)}/${ms(row.p99.flow)}`,
      models ? `${row.models} ${JSON.stringify(models)}` : '-', keys ?? '-',
    ].join(' | '));
    if (done.firstFailure) console.log(`  failures by step ${JSON.stringify(done.failedSteps)}; first: ${done.firstFailure}`);
  }
  clearInterval(ticker);
  while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 50));

  // 4. Verdict.
  const base = rows[Math.min(1, rows.length - 1)];
  const last = rows[rows.length - 1];
  const rssChange = (last.rss - base.rss) / base.rss;
  // After minute 1's warm-up: the first half (the stores' bound, the flows' early p99) and the rest.
  const firstHalf = rows.length > 1 ? rows.slice(1, Math.max(2, Math.ceil(rows.length / 2))) : rows;
  const secondHalf = rows.slice(1 + firstHalf.length);
  const late = secondHalf.length ? secondHalf : [last];
  const flowP99 = (window) => quantile(window.flatMap((r) => r.flowTimes).sort((a, b) => a - b), 0.99);
  const minutes = (window) => (window.length > 1 ? `minutes ${window[0].minute}–${window.at(-1).minute}` : `minute ${window[0].minute}`);
  const [earlyP99, lateP99] = [flowP99(firstHalf), flowP99(late)];
  const p99Drift = (lateP99 - earlyP99) / earlyP99;
  const bounded = (key) => {
    if (last[key] === undefined) return { ok: true, text: 'n/a' };
    const high = Math.max(...firstHalf.map((r) => r[key]));
    return { ok: last[key] <= high * 1.2 + 50, text: `last ${last[key]} vs first-half high ${high}` };
  };
  const models = bounded('models');
  const keys = bounded('keys');
  const failures = rows.reduce((a, r) => a + r.failures, 0);
  const flows = rows.reduce((a, r) => a + r.flows, 0);
  const checks = [
    [`RSS flat within 10 % (minute ${base.minute} ${mb(base.rss)} MB → minute ${last.minute} ${mb(last.rss)} MB: ${(rssChange * 100).toFixed(1)} %)`, Math.abs(rssChange) <= 0.10],
    [`flow p99 drift under 20 % (${minutes(firstHalf)} ${ms(earlyP99)} ms → ${minutes(late)} ${ms(lateP99)} ms: ${(p99Drift * 100).toFixed(1)} %)`, p99Drift < 0.20],
    [`oidc_models bounded (${models.text})`, models.ok],
    [`Redis keys bounded (${keys.text})`, keys.ok],
    [`no failed flows (${failures} of ${flows + failures})`, failures === 0],
  ];
  console.log('\nverdict:');
  for (const [text, ok] of checks) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${text}`);
  const passed = checks.every(([, ok]) => ok);
  console.log(passed ? 'soak PASSED' : 'soak FAILED');
  await stop(passed ? 0 : 1);
} catch (error) {
  console.error(error);
  console.error(service.output().slice(-5000));
  await stop(2);
}
